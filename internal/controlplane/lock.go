package controlplane

import (
	"errors"
	"os"
	"syscall"
)

// dirLock is an exclusive flock on the data directory's lock file. The kernel
// drops it when the holder exits, however it exits, so a crashed supervisor
// never leaves a stale lock behind.
type dirLock struct{ f *os.File }

var errLocked = errors.New("locked")

func lockDir(l Layout) (*dirLock, error) {
	f, err := os.OpenFile(l.LockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return &dirLock{f: f}, nil
}

func (d *dirLock) release() {
	_ = syscall.Flock(int(d.f.Fd()), syscall.LOCK_UN)
	d.f.Close()
}

// locked reports whether a running supervisor holds the data directory.
func locked(l Layout) bool {
	d, err := lockDir(l)
	if err != nil {
		return errors.Is(err, errLocked)
	}
	d.release()
	return false
}
