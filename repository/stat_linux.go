package repository

import "syscall"

func statOf(st *syscall.Stat_t) shardStat {
	return shardStat{dev: uint64(st.Dev), ino: uint64(st.Ino),
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}
