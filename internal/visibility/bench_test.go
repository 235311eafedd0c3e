package visibility

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/berth-dev/berth/internal/core/coretest"
	"github.com/berth-dev/berth/internal/queue"
	"github.com/berth-dev/berth/internal/scheduler"
)

// BenchmarkClusterQueuePage measures the controller's side of the first
// page (1,000) of a ClusterQueue with 50,000 pending workloads spread over
// 50 LocalQueues: the copy out of the scheduler under its lock, the sort, the
// positions and the JSON, as ServeHTTP does them. The API server's proxying
// comes on top (docs/benchmarks.md has both).
func BenchmarkClusterQueuePage(b *testing.B) {
	const pending, localQueues = 50_000, 50
	s := scheduler.New(clock.RealClock{})
	s.SetClusterQueue(MakeClusterQueue("cq").ResourceGroup(MakeFlavorQuotas("rf").Resource("cpu", "0").Obj()).Obj())
	for i := range localQueues {
		s.SetLocalQueue(queue.LocalQueue{Key: fmt.Sprintf("ns%d/lq", i), ClusterQueue: "cq"})
	}
	for i := range pending {
		w := MakeWorkload("", "cq").Priority(int32(i%7)).Created(time.Duration(i)*time.Millisecond).Request("cpu", "1").Obj()
		w.Key = fmt.Sprintf("ns%d/w%d", i%localQueues, i)
		s.WorkloadPending(w, fmt.Sprintf("ns%d/lq", i%localQueues))
	}
	s.Cycle() // every queue's head gets a reason, as in a running controller

	ca, proxy, _ := certs(b, "front-proxy-client")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srv := &Server{Lines: s, Proxy: FrontProxy{CAs: pool}, Ready: func() error { return nil }, Clock: clocktesting.NewFakePassiveClock(now)}
	for _, path := range []string{Path + "/clusterqueues/cq/pendingworkloads", Path + "/namespaces/ns7/localqueues/lq/pendingworkloads"} {
		b.Run(path[len(Path)+1:], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest("GET", path, nil)
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{proxy}}
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}
