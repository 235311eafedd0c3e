package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/visibility"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

// pendingWorkloads asks the visibility API, through the API server, as
// kube; params are name, value pairs (limit, offset).
func pendingWorkloads(kube kubernetes.Interface, path string, params ...string) (*visibilityv1.PendingWorkloadsSummary, error) {
	req := kube.Discovery().RESTClient().Get().AbsPath(visibility.Path + path)
	for i := 0; i+1 < len(params); i += 2 {
		req = req.Param(params[i], params[i+1])
	}
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	data, err := res.Raw()
	if err != nil {
		return nil, err
	}
	var s visibilityv1.PendingWorkloadsSummary
	return &s, json.Unmarshal(data, &s)
}

func cqPath(cq string) string { return "/clusterqueues/" + cq + "/pendingworkloads" }
func lqPath(ns, lq string) string {
	return "/namespaces/" + ns + "/localqueues/" + lq + "/pendingworkloads"
}

func itemNames(s *visibilityv1.PendingWorkloadsSummary) []string {
	var out []string
	for _, it := range s.Items {
		out = append(out, it.Name)
	}
	return out
}

// The positions the visibility API gives are the order berth admits in,
// under either strategy, with priorities; a LocalQueue's view keeps the
// ClusterQueue positions and counts its own.
func TestPendingPositionsAreTheAdmissionOrder(t *testing.T) {
	for _, strategy := range []berthv1.QueueingStrategy{berthv1.StrictFIFO, berthv1.BestEffortFIFO} {
		t.Run(string(strategy), func(t *testing.T) {
			env := testenv.New(t)
			rf, cq := env.Name("rf"), env.Name("cq")
			env.Create(t, MakeResourceFlavor(rf).Obj())
			env.Create(t, MakeClusterQueue(cq).Strategy(strategy).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
			env.Create(t, MakeLocalQueue("a", env.Namespace, cq).Obj())
			env.Create(t, MakeLocalQueue("b", env.Namespace, cq).Obj())
			env.Create(t, MakeWorkload("blocker", env.Namespace).Queue("a").Priority(100).Request("cpu", "1").Obj())
			waitAdmitted(t, env, env.Namespace, "blocker")

			priorities := []int32{0, 5, 0, 5, 10, 0}
			for i, p := range priorities {
				lq := []string{"a", "b"}[i%2]
				env.Create(t, MakeWorkload(fmt.Sprintf("w%d", i), env.Namespace).Queue(lq).Priority(p).Request("cpu", "1").Obj())
			}
			var line *visibilityv1.PendingWorkloadsSummary
			testenv.Eventually(t, wait, func() error {
				var err error
				if line, err = pendingWorkloads(env.Kube, cqPath(cq)); err != nil {
					return err
				}
				if int(line.Total) != len(priorities) {
					return fmt.Errorf("%d in line, want %d: %v", line.Total, len(priorities), itemNames(line))
				}
				return nil
			})
			for i, it := range line.Items {
				if int(it.PositionInClusterQueue) != i+1 || it.ClusterQueueName != cq || it.Namespace != env.Namespace {
					t.Errorf("item %d: %+v", i, it)
				}
			}
			// b's view: its workloads only, their places in the whole line.
			b, err := pendingWorkloads(env.Kube, lqPath(env.Namespace, "b"))
			if err != nil {
				t.Fatal(err)
			}
			var want []visibilityv1.PendingWorkload
			for _, it := range line.Items {
				if it.LocalQueueName == "b" {
					want = append(want, it)
				}
			}
			if len(b.Items) != len(want) || int(b.Total) != len(want) {
				t.Fatalf("LocalQueue b: %v, want %d", itemNames(b), len(want))
			}
			for i, it := range b.Items {
				if it.Name != want[i].Name || it.PositionInClusterQueue != want[i].PositionInClusterQueue || int(it.PositionInLocalQueue) != i+1 {
					t.Errorf("LocalQueue b item %d: %+v, want %s at %d", i, it, want[i].Name, want[i].PositionInClusterQueue)
				}
			}

			// Release the quota one workload at a time and watch who gets it.
			admitted := "blocker"
			var order []string
			for range priorities {
				if err := env.Client.Delete(ctx, MakeWorkload(admitted, env.Namespace).Obj()); err != nil {
					t.Fatal(err)
				}
				testenv.Eventually(t, wait, func() error {
					var l berthv1.WorkloadList
					if err := env.Client.List(ctx, &l, client.InNamespace(env.Namespace)); err != nil {
						return err
					}
					for _, wl := range l.Items {
						if wl.Name != admitted && wl.DeletionTimestamp == nil && workload.IsAdmitted(&wl) {
							admitted = wl.Name
							return nil
						}
					}
					return fmt.Errorf("none admitted after %s was deleted", admitted)
				})
				order = append(order, admitted)
			}
			if !slices.Equal(order, itemNames(line)) {
				t.Errorf("admitted in the order %v; the visibility API said %v", order, itemNames(line))
			}
		})
	}
}

// A user who may read one namespace sees that namespace's LocalQueue
// positions, and neither another namespace's nor a ClusterQueue's whole
// line; the visibility API answers nobody who bypasses the API server.
func TestPendingPositionsAreVisibleOnlyToWhoMayReadTheNamespace(t *testing.T) {
	env := testenv.New(t)
	rf, cq, other := env.Name("rf"), env.Name("cq"), env.Name("other")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "1").Obj()).Obj())
	env.Create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
	for _, ns := range []string{env.Namespace, other} {
		env.Create(t, MakeLocalQueue("lq", ns, cq).Obj())
		env.Create(t, MakeWorkload("big", ns).Queue("lq").Request("cpu", "2").Obj())
	}

	// A real identity: a ServiceAccount's token, with the built-in view
	// role in env.Namespace only.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: env.Namespace}}
	env.Create(t, sa)
	env.Create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer", Namespace: env.Namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "viewer", Namespace: env.Namespace}}})
	tok, err := env.Kube.CoreV1().ServiceAccounts(env.Namespace).CreateToken(ctx, "viewer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = tok.Status.Token
	viewer, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The view role takes in berth-namespace-viewer's rules when the
	// aggregation controller gets to it.
	testenv.Eventually(t, wait, func() error {
		s, err := pendingWorkloads(viewer, lqPath(env.Namespace, "lq"))
		if err != nil {
			return err
		}
		if !slices.Equal(itemNames(s), []string{"big"}) || s.Items[0].Reason == "" {
			return fmt.Errorf("own LocalQueue shows %+v, want big with a reason", s.Items)
		}
		return nil
	})
	for _, path := range []string{lqPath(other, "lq"), cqPath(cq)} {
		if _, err := pendingWorkloads(viewer, path); !apierrors.IsForbidden(err) {
			t.Errorf("viewer of %s asked %s: %v, want Forbidden", env.Namespace, path, err)
		}
	}
	// The admin sees both namespaces in the ClusterQueue's line.
	testenv.Eventually(t, wait, func() error {
		s, err := pendingWorkloads(env.Kube, cqPath(cq))
		if err != nil {
			return err
		}
		if s.Total != 2 {
			return fmt.Errorf("admin sees %v in the line, want both namespaces' workloads", itemNames(s))
		}
		return nil
	})

	// Straight to the controller, even with the admin's certificate: refused.
	var api apiregistrationv1.APIService
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "v1beta1.visibility.berth.dev"}, &api); err != nil {
		t.Fatal(err)
	}
	// Removing berth's CRDs removes the APIService too (owned by one).
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "workloads.berth.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	if o := api.OwnerReferences; len(o) != 1 || o[0].Kind != "CustomResourceDefinition" || o[0].UID != crd.UID {
		t.Errorf("APIService owners %+v, want the CRD workloads.berth.dev (uid %s)", o, crd.UID)
	}
	tlsCfg, err := rest.TLSConfigFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.InsecureSkipVerify, tlsCfg.ServerName = true, ""
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := direct.Get(fmt.Sprintf("https://127.0.0.1:%d%s%s", *api.Spec.Service.Port, visibility.Path, cqPath(cq)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a direct call with the admin's certificate got %s, want 401", resp.Status)
	}
}

// BenchmarkPendingWorkloads50k measures the visibility API end to end,
// through the API server: the first page (1,000) of a ClusterQueue with
// 50,000 pending workloads in 50 LocalQueues. Creating them takes a few
// minutes; run it alone:
//
//	go test ./test/integration -run '^$' -bench PendingWorkloads50k -benchtime 50x
func BenchmarkPendingWorkloads50k(b *testing.B) {
	const pending, localQueues = 50_000, 50
	env := testenv.New(b)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(b, MakeResourceFlavor(rf).Obj())
	env.Create(b, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "0").Obj()).Obj())
	for i := range localQueues {
		env.Create(b, MakeLocalQueue(fmt.Sprintf("lq%d", i), env.Namespace, cq).Obj())
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	errs := make(chan error, 16)
	for g := range 16 {
		go func() {
			for i := g; i < pending; i += 16 {
				wl := MakeWorkload(fmt.Sprintf("w%d", i), env.Namespace).Queue(fmt.Sprintf("lq%d", i%localQueues)).
					Priority(int32(i%7)).Request("cpu", "1").Obj()
				if err := c.Create(ctx, wl); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("created %d workloads in %s", pending, time.Since(began).Round(time.Second))
	testenv.Eventually(b, 10*time.Minute, func() error {
		s, err := pendingWorkloads(env.Kube, cqPath(cq), "limit", "1")
		if err != nil {
			return err
		}
		if s.Total != pending {
			return fmt.Errorf("%d in line, want %d", s.Total, pending)
		}
		return nil
	})
	b.Logf("all in line after %s", time.Since(began).Round(time.Second))
	// Measure a settled controller: every workload looked at (the last in
	// line has a reason) and its reason written to the API server.
	testenv.Eventually(b, 20*time.Minute, func() error {
		s, err := pendingWorkloads(env.Kube, cqPath(cq), "offset", fmt.Sprint(pending-1), "limit", "1")
		if err != nil {
			return err
		}
		if len(s.Items) != 1 || s.Items[0].Reason == "" {
			return fmt.Errorf("the last in line has not been looked at yet: %+v", s.Items)
		}
		wl, err := getWorkload(env, env.Namespace, s.Items[0].Name)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(wl.Status.Conditions, berthv1.WorkloadQuotaReserved); c == nil {
			return fmt.Errorf("%s has no QuotaReserved condition yet", wl.Name)
		}
		return nil
	})
	b.Logf("settled after %s", time.Since(began).Round(time.Second))
	for _, path := range []string{cqPath(cq), lqPath(env.Namespace, "lq7")} {
		b.Run(strings.Split(path, "/")[1], func(b *testing.B) {
			for b.Loop() {
				s, err := pendingWorkloads(env.Kube, path)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Items) != 1000 {
					b.Fatalf("%d items, want a page of 1000", len(s.Items))
				}
			}
		})
	}
}
