package procstat

import (
	"os"
	"testing"
)

func TestReadsThisProcess(t *testing.T) {
	// Burn a little CPU so the count is above zero.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	cpu, err := CPUSeconds(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("CPUSeconds = %v, %v; want > 0 (%d)", cpu, err, x)
	}
	hwm, err := StatusKB(os.Getpid(), "VmHWM")
	if err != nil || hwm <= 0 {
		t.Errorf("VmHWM = %v, %v; want > 0", hwm, err)
	}
	if _, err := StatusKB(os.Getpid(), "NoSuchField"); err == nil {
		t.Error("no error for a field /proc does not have")
	}
}
