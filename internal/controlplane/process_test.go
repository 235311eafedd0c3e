package controlplane

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWithoutStacksKeepsTheReason(t *testing.T) {
	in := []string{
		`I0101 starting`,
		`{"level":"panic","msg":"failed to open database","error":"file size too small 3000","stacktrace":"go.etcd.io/x\n\tbackend.go:205"}`,
		`panic: failed to open database`,
		``,
		`goroutine 237 [running]:`,
		`go.uber.org/zap/zapcore.CheckWriteAction.OnWrite(0x2?)`,
		`	/root/go/pkg/mod/go.uber.org/zap@v1.27.1/zapcore/entry.go:196 +0x54`,
		``,
		`goroutine 1 [chan receive]:`,
		`main.main()`,
	}
	want := []string{
		`I0101 starting`,
		`{"level":"panic","msg":"failed to open database","error":"file size too small 3000"}`,
		`panic: failed to open database`,
		``,
	}
	if got := withoutStacks(in); !slices.Equal(got, want) {
		t.Errorf("withoutStacks:\n got %q\nwant %q", got, want)
	}
}

func TestTailFileReadsOnlyThisRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	old := "earlier run\n"
	if err := os.WriteFile(path, []byte(old+"one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := TailFile(path, int64(len(old)), 2); !slices.Equal(got, []string{"two", "three"}) {
		t.Errorf("TailFile = %q", got)
	}
	if got := TailFile(path, int64(len(old)), 10); slices.Contains(got, "earlier run") {
		t.Errorf("TailFile returned a line from before the offset: %q", got)
	}
	if got := TailFile(filepath.Join(t.TempDir(), "missing"), 0, 5); got != nil {
		t.Errorf("TailFile of a missing file = %q", got)
	}
	long := strings.Repeat("x", 1000)
	if got := withoutStacks([]string{long}); len(got[0]) > 500 {
		t.Errorf("a %d-character line was kept whole", len(long))
	}
}
