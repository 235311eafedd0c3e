package supervisor

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// A virtual cluster is one whose settings were written: List finds those
// and only those, and Read gives back what was written.
func TestSettingsRoundTripAndList(t *testing.T) {
	dir := t.TempDir()
	if got, err := List(dir); err != nil || len(got) != 0 {
		t.Fatalf("no virtual clusters yet: %v %v", got, err)
	}
	want := &Settings{Name: "team-a", HostNamespace: "vcluster-team-a", AdminKubeconfig: "/k",
		Policy: translate.Policy{Queue: "tenants", PodSecurity: "restricted"}, CreatedNamespace: true}
	vdir := filepath.Join(Dir(dir), "team-a")
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := write(vdir, want); err != nil {
		t.Fatal(err)
	}
	// A directory left half made (no settings) is no virtual cluster.
	if err := os.MkdirAll(filepath.Join(Dir(dir), "half"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := List(dir)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"team-a": vdir}) {
		t.Fatalf("List: %v %v, want team-a only", got, err)
	}
	read, err := Read(vdir)
	if err != nil || !reflect.DeepEqual(read, want) {
		t.Fatalf("Read: %+v %v, want %+v", read, err, want)
	}
	if info, err := os.Stat(settingsFile(vdir)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("settings file: %v %v, want mode 0600 (it names the host's admin kubeconfig)", info, err)
	}
}
