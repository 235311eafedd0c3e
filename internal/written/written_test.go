package written_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/berth-dev/berth/internal/written"
)

func TestStaleUntilTheCacheShowsTheWrite(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	v := written.New(func() time.Time { return now })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	c := v.Client(fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(pod).Build())
	var cached corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &cached); err != nil {
		t.Fatal(err)
	}
	if v.Stale(&cached) {
		t.Fatal("stale before any write")
	}

	mine := cached.DeepCopy()
	mine.Labels = map[string]string{"k": "v"}
	if err := c.Update(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if !v.Stale(&cached) {
		t.Errorf("the copy read before the update (resourceVersion %s, written %s) is not stale",
			cached.ResourceVersion, mine.ResourceVersion)
	}
	// Another kind of the same name is another object.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}}
	if v.Stale(other) {
		t.Error("a Secret of the same name is stale")
	}
	// Status writes count too.
	st := mine.DeepCopy()
	st.Status.Message = "m"
	if err := c.Status().Update(ctx, st); err != nil {
		t.Fatal(err)
	}
	if !v.Stale(mine) {
		t.Error("the copy read before the status write is not stale")
	}
	if v.Stale(st) {
		t.Error("the copy the last write returned is stale")
	}
	// Caught up: the record is gone, and an older copy is no longer told.
	if v.Stale(&cached) {
		t.Error("the record was kept once the cache caught up")
	}

	// A write the cache never shows is forgotten after TTL.
	again := st.DeepCopy()
	again.Labels["k"] = "w"
	if err := c.Update(ctx, again); err != nil {
		t.Fatal(err)
	}
	now = now.Add(written.TTL + time.Second)
	if v.Stale(st) {
		t.Error("a write older than TTL still makes the cache stale")
	}
	// A resourceVersion that is not a number is never compared.
	odd := st.DeepCopy()
	odd.ResourceVersion = "x"
	if v.Stale(odd) {
		t.Error("a resourceVersion that is not a number is stale")
	}
	var none *written.Versions
	none.Record(st)
	if none.Stale(&cached) {
		t.Error("a nil Versions says a copy is stale")
	}
}
