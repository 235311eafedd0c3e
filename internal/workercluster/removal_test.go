package workercluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/workercluster"
)

func TestRemoval(t *testing.T) {
	const lost = 15 * time.Minute
	for _, tc := range []struct {
		name           string
		reason         string
		left           int
		unreachableFor time.Duration
		done           bool
		note           string
	}{
		{"reached, copies left: they are deleted first", workercluster.Connected, 3, 0, false, "deleting 3 copies"},
		{"reached, nothing left: it goes", workercluster.Connected, 0, 0, true, ""},
		{"no Secret: nothing can be reached, it goes", workercluster.SecretNotFound, 0, 0, true, "its kubeconfig cannot reach it"},
		{"a refused kubeconfig: it goes", workercluster.BadKubeconfig, 0, time.Hour, true, "its kubeconfig cannot reach it"},
		{"unreachable for a while: waited for", workercluster.Unreachable, 0, 5 * time.Minute, false, "waiting up to 10m0s"},
		{"unreachable past the lost timeout: it goes, and says what is left", workercluster.Unreachable, 0, lost, true, "not reached for 15m0s"},
	} {
		done, note := workercluster.Removal(tc.reason, tc.left, tc.unreachableFor, lost)
		if done != tc.done || !strings.Contains(note, tc.note) || (tc.note == "" && note != "") {
			t.Errorf("%s: done %v %q, want %v with %q", tc.name, done, note, tc.done, tc.note)
		}
	}
}
