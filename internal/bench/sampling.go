package bench

import (
	"context"
	"sync/atomic"

	"github.com/berth-dev/berth/internal/procstat"
)

// memoryWatch follows a process's memory: the kernel's record of its peak
// RSS, and the peak of the private (anonymous) part of it, sampled. The rest
// of RSS is the pages of the berth binary, which every component of a berth
// instance maps and shares.
type memoryWatch struct {
	pid  int
	anon atomic.Int64 // KiB
}

// watchMemory samples pid's memory until ctx ends; pid 0 watches nothing.
func watchMemory(ctx context.Context, pid int) *memoryWatch {
	m := &memoryWatch{pid: pid}
	if pid > 0 {
		go sample(ctx, pid, &m.anon)
	}
	return m
}

// peaks are the peak RSS and peak private memory in MiB, when known.
func (m *memoryWatch) peaks() (rss, anon *float64) {
	if m.pid <= 0 {
		return nil, nil
	}
	if kb, err := procstat.StatusKB(m.pid, "VmHWM"); err == nil {
		v := float64(kb) / 1024
		rss = &v
	}
	if kb := m.anon.Load(); kb > 0 {
		v := float64(kb) / 1024
		anon = &v
	}
	return rss, anon
}

func cpuOf(pid int) *float64 {
	if pid <= 0 {
		return nil
	}
	v, err := procstat.CPUSeconds(pid)
	if err != nil {
		return nil
	}
	return &v
}
