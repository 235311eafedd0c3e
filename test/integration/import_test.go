package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/fromkueue"
	"github.com/berth-dev/berth/internal/testenv"
)

// Every Kueue manifest of internal/fromkueue's testdata imports to objects
// the real API server accepts (a server-side dry run: nothing is stored).
func TestImportedObjectsAreAccepted(t *testing.T) {
	env := testenv.New(t)
	files, _ := filepath.Glob("../../internal/fromkueue/testdata/kueue-*.yaml")
	if len(files) == 0 {
		t.Fatal("no Kueue manifests found")
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := fromkueue.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			o, err := fromkueue.Import(d)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			u := &unstructured.Unstructured{Object: o.Object}
			if u.GetNamespace() != "" {
				u.SetNamespace(env.Namespace)
			}
			if err := env.Client.Create(ctx, u, client.DryRunAll); err != nil {
				t.Errorf("%s: %s refused: %v", filepath.Base(file), o.Name(), err)
			}
		}
	}
}

// berth import --apply creates the berth objects, says what it left behind,
// and applies again without complaint; a manifest with one bad object
// changes nothing.
func TestImportApply(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	rf, cq := env.Name("rf"), env.Name("cq")
	manifest := fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: %[1]s}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: %[2]s}
spec:
  cohortName: %[2]s-cohort
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: %[1]s
      resources: [{name: cpu, nominalQuota: "4"}]
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
  flavorFungibility: {preference: BorrowingOverPreemption}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: main, namespace: %[3]s}
spec: {clusterQueue: %[2]s, fairSharing: {weight: "3"}}
`, rf, cq, env.Namespace)
	t.Cleanup(func() { // cluster-scoped: they do not go with the namespace
		for kind, name := range map[string]string{"ClusterQueue": cq, "ResourceFlavor": rf} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("berth.dev/v1beta1")
			u.SetKind(kind)
			u.SetName(name)
			_ = env.Client.Delete(ctx, u)
		}
	})
	run := func(input string, args ...string) (stdout, stderr string, err error) {
		cmd := exec.Command(bin, append([]string{"import", "-f", "-", "--kubeconfig", env.Kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(input)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}
	for range 2 {
		out, errOut, err := run(manifest, "--apply")
		if err != nil || !strings.Contains(out, "ClusterQueue "+cq+" applied") || !strings.Contains(out, "LocalQueue "+env.Namespace+"/main applied") ||
			!strings.Contains(errOut, "ClusterQueue "+cq+": not carried over: spec.flavorFungibility.preference: berth has no preference between borrowing and preemption across flavors") {
			t.Fatalf("berth import --apply: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
		}
	}
	got, err := clusterQueue(env, cq)
	if err != nil || got.Spec.Cohort != cq+"-cohort" || got.Spec.AdmissionScope == nil ||
		got.Spec.AdmissionScope.AdmissionMode != berthv1.UsageBasedAdmissionFairSharing {
		t.Fatalf("imported ClusterQueue: %v, cohort %q, admission scope %+v", err, got.Spec.Cohort, got.Spec.AdmissionScope)
	}
	var lq berthv1.LocalQueue
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "main"}, &lq); err != nil ||
		lq.Spec.FairSharing == nil || lq.Spec.FairSharing.Weight == nil || lq.Spec.FairSharing.Weight.String() != "3" {
		t.Fatalf("imported LocalQueue: %v, %+v", err, lq.Spec.FairSharing)
	}

	// One object the API server refuses (a quota that is not a quantity):
	// nothing of the manifest is applied.
	bad := strings.ReplaceAll(manifest, rf, rf+"-2")
	bad = strings.ReplaceAll(bad, "name: "+cq+"}", "name: "+cq+"-2}")
	bad = strings.Replace(bad, `nominalQuota: "4"`, `nominalQuota: "four"`, 1)
	if out, errOut, err := run(bad, "--apply"); err == nil || !strings.Contains(errOut, "nothing applied") {
		t.Fatalf("a bad quota: %v\n%s\n%s", err, out, errOut)
	}
	if _, err := clusterQueue(env, cq+"-2"); err == nil {
		t.Errorf("ClusterQueue %s-2 was created from a refused manifest", cq)
	}

	// An object berth cannot take (a check of Kueue's provisioning
	// controller, which berth does not run) is refused by the import, with
	// why; the others are still applied, and the command fails.
	prov := env.Name("prov")
	mixed := fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: %[1]s}
spec: {controllerName: kueue.x-k8s.io/provisioning-request}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: second, namespace: %[2]s}
spec: {clusterQueue: %[3]s}
`, prov, env.Namespace, cq)
	out, errOut, err := run(mixed, "--apply")
	if err == nil || !strings.Contains(errOut, "1 of 2 objects refused, the others imported") ||
		!strings.Contains(errOut, "AdmissionCheck "+prov+": spec.controllerName kueue.x-k8s.io/provisioning-request") ||
		!strings.Contains(out, "LocalQueue "+env.Namespace+"/second applied") {
		t.Fatalf("a manifest with one refused object: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	var ac berthv1.AdmissionCheck
	if err := env.Client.Get(ctx, client.ObjectKey{Name: prov}, &ac); err == nil {
		t.Errorf("AdmissionCheck %s was created though refused", prov)
	}
}
