package repository

import "syscall"

func statOf(st *syscall.Stat_t) shardStat {
	return shardStat{dev: uint64(st.Dev), ino: st.Ino,
		mtime: st.Mtimespec.Nano(), ctime: st.Ctimespec.Nano()}
}
