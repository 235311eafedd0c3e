package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/testenv"
	. "github.com/berth-dev/berth/test/fixtures"
)

// Lesson 1: a Topology stored without levels (as an older version that
// dropped the field would have stored it; here written into etcd directly,
// past the API server's validation) never brings the controller down. The
// ClusterQueues of its flavor go inactive with a condition and an event
// naming it, the other queues keep admitting, and fixing the Topology
// recovers without a restart.
func TestTopologyWithoutLevelsInEtcd(t *testing.T) {
	inst := testenv.Instance()
	if inst == nil {
		t.Skip("needs the control plane testenv starts: it writes to etcd directly")
	}
	env := testenv.New(t)
	topologyQueue(t, env, 1, 1, 2)
	var topo berthv1.Topology
	if err := env.Client.Get(ctx, client.ObjectKey{Name: env.Name("dc")}, &topo); err != nil {
		t.Fatal(err)
	}
	tasCQ := env.Name("cq")
	// Another queue, on a plain flavor, for another namespace.
	other := testenv.New(t)
	_, plainCQ, _ := podQueue(t, other, "4")

	restartsBefore := controllerRestarts(t, inst)
	tlsConfig, err := controlplane.EtcdTLS(inst.Layout())
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("https://127.0.0.1:%d", inst.State().Ports.EtcdClient)},
		DialTimeout: 10 * time.Second, TLS: tlsConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	key := "/registry/berth.dev/topologies/" + topo.Name
	got, err := etcd.Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v (%d keys)", key, err, len(got.Kvs))
	}
	var stored map[string]any
	if err := json.Unmarshal(got.Kvs[0].Value, &stored); err != nil {
		t.Fatalf("%s is not JSON: %v", key, err)
	}
	stored["spec"] = map[string]any{"levels": []any{}}
	raw, _ := json.Marshal(stored)
	if _, err := etcd.Put(ctx, key, string(raw)); err != nil {
		t.Fatal(err)
	}

	wantMsg := fmt.Sprintf("Topology %s has no levels", topo.Name)
	testenv.Eventually(t, wait, func() error {
		cq, err := clusterQueue(env, tasCQ)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(cq.Status.Conditions, "Active")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "TopologyWithoutLevels" || !strings.Contains(c.Message, wantMsg) {
			return fmt.Errorf("ClusterQueue %s condition Active %+v; want False, TopologyWithoutLevels, %q", tasCQ, c, wantMsg)
		}
		return nil
	})
	testenv.Eventually(t, wait, func() error {
		evs, err := env.Kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + topo.Name})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "NoLevels" && strings.Contains(e.Note, wantMsg) {
				return nil
			}
		}
		return fmt.Errorf("no NoLevels event about Topology %s among %d", topo.Name, len(evs.Items))
	})

	// Its Job waits, saying why; a Job of the other queue runs.
	tas := gangJob(env, "tas", 2, integration.RequiredTopologyAnnotation, rackLabel)
	env.Create(t, tas)
	waitPending(t, env, env.Namespace, jobWorkload(t, env, tas).Name, wantMsg)
	plain := MakeJob("plain", other.Namespace).Queue("main").Parallelism(1).Request("cpu", "1").
		Toleration(other.Toleration()).PodAnnotation("berth.dev/sim-duration", "1h").Obj()
	other.Create(t, plain)
	waitAdmitted(t, other, other.Namespace, jobWorkload(t, other, plain).Name)
	if q, err := clusterQueue(other, plainCQ); err != nil || meta.IsStatusConditionFalse(q.Status.Conditions, "Active") {
		t.Errorf("the plain ClusterQueue: %v %+v", err, q.Status.Conditions)
	}

	// Fixed through the API, the queue admits again, with no restart.
	var fix berthv1.Topology
	if err := env.Client.Get(ctx, client.ObjectKey{Name: topo.Name}, &fix); err != nil {
		t.Fatal(err)
	}
	if len(fix.Spec.Levels) != 0 {
		t.Fatalf("the API server reads levels %v back, want none", fix.Spec.Levels)
	}
	fix.Spec.Levels = topo.Spec.Levels
	if err := env.Client.Update(ctx, &fix); err != nil {
		t.Fatal(err)
	}
	runningPods(t, env, "tas", 2)
	if after := controllerRestarts(t, inst); after != restartsBefore {
		t.Errorf("the controller restarted %d times during the test", after-restartsBefore)
	}
}

func controllerRestarts(t *testing.T, inst *controlplane.Instance) int {
	t.Helper()
	for _, c := range inst.State().Components {
		if c.Name == "berth-controller" {
			return c.Restarts
		}
	}
	t.Fatal("no berth-controller component")
	return 0
}
