package broker

// mkfifo makes nothing: Windows has no named pipe in its file system.
func mkfifo(string) error { return nil }
