package written

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Writes the cache never showed (their objects deleted, say) do not pile
// up: a Record after TTL drops every entry older than it.
func TestRecordDropsWritesOlderThanTTL(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	v := New(func() time.Time { return now })
	pod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
	}
	v.Record(pod("old", "5"))
	now = now.Add(TTL / 2)
	v.Record(pod("recent", "6"))
	if len(v.last) != 2 {
		t.Fatalf("%d writes remembered, want 2", len(v.last))
	}
	now = now.Add(TTL/2 + time.Second)
	v.Record(pod("new", "7"))
	if _, ok := v.last[keyOf(pod("old", ""))]; ok || len(v.last) != 2 {
		t.Errorf("remembered %v; want the write older than TTL dropped, the other two kept", v.last)
	}
}
