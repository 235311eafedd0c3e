package fence

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLock accepts every write.
type fakeLock struct{ id string }

func (l fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{}, nil, nil
}
func (l fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (l fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return nil }
func (l fakeLock) RecordEvent(string)                                              {}
func (l fakeLock) Identity() string                                                { return l.id }
func (l fakeLock) Describe() string                                                { return "fake" }

func TestAPausedLeaderStopsWritingBeforeAnotherCanLead(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	f := New(clock, 10*time.Second)
	lock := f.Lock(fakeLock{id: "me"})
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer server.Close()
	c := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
	write := func() error {
		req, _ := http.NewRequest(http.MethodPatch, server.URL, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	read := func() error {
		resp, err := c.Get(server.URL)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	if err := write(); err != nil {
		t.Fatalf("a replica that never led may write (its start-up's objects): %v", err)
	}
	if err := lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	clock.Step(2 * time.Second)
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"})
	clock.Step(9 * time.Second)
	if err := write(); err != nil {
		t.Fatalf("9 s after a renewal: %v", err)
	}
	// Paused: no renewal for longer than the deadline. Another replica
	// takes the lease 15 s after it last saw ours; we stop at 10.
	clock.Step(2 * time.Second)
	err := write()
	if err == nil || !strings.Contains(err.Error(), "not the leader any more") {
		t.Fatalf("11 s after the last renewal, write = %v; want it refused", err)
	}
	if err := read(); err != nil {
		t.Errorf("reads are never refused: %v", err)
	}
	if f.Refused() != 1 {
		t.Errorf("Refused = %d, want 1", f.Refused())
	}
	// Releasing the lease (an empty holder) is not a renewal.
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""})
	if write() == nil {
		t.Error("releasing the lease let writes through again")
	}
}
