package integration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/testenv"
)

// The deploy manifests (kubectl apply -k config/deploy) are valid to a real API
// server: server-side dry run validates every object, the Deployment's pod
// template and the webhook configuration included.
func TestDeployManifestsAreValid(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := exec.Command(bin, "kubectl", "kustomize", "../../config/deploy").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/deploy: %v", err)
	}
	// Kustomize sets no namespace: the controller's Role for reading the
	// API server's front-proxy CA must stay in kube-system.
	if !strings.Contains(string(rendered), "  name: berth-controller\n  namespace: kube-system\n") {
		t.Errorf("config/deploy lost the controller's Role and RoleBinding in kube-system:\n%s", rendered)
	}
	// This cluster already has a webhook configuration named berth (the
	// local controller's, by URL); validate the manifest as a new object.
	manifest := strings.Replace(string(rendered), "  name: berth\nwebhooks:", "  name: "+env.Name("berth")+"\nwebhooks:", 1)
	cmd := exec.Command(bin, "kubectl", "--kubeconfig", env.Kubeconfig,
		"apply", "-f", "-", "--server-side", "--force-conflicts", "--dry-run=server", "-o", "name")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply (config/deploy) --dry-run=server: %v\n%s", err, out)
	}
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/clusterqueues.berth.dev",
		"clusterrole.rbac.authorization.k8s.io/berth-controller",
		"role.rbac.authorization.k8s.io/berth-controller",
		"serviceaccount/berth-controller",
		"deployment.apps/berth-controller",
		"service/berth-webhook",
		"poddisruptionbudget.policy/berth-controller",
		"clusterrole.rbac.authorization.k8s.io/berth-visibility-viewer",
		"clusterrole.rbac.authorization.k8s.io/berth-namespace-viewer",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/" + env.Name("berth"),
		"apiservice.apiregistration.k8s.io/v1beta1.visibility.berth.dev",
		"service/berth-metrics",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply -k config/deploy did not include %s:\n%s", want, out)
		}
	}
}

// config/vcluster (a virtual cluster run as a Deployment) is valid to a real
// API server too.
func TestVClusterManifestsAreValid(t *testing.T) {
	env := testenv.New(t)
	bin, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := exec.Command(bin, "kubectl", "kustomize", "../../config/vcluster").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/vcluster: %v", err)
	}
	// Into this test's namespace, which exists: a dry run makes none.
	manifest := strings.ReplaceAll(string(rendered), "namespace: vcluster-team-a", "namespace: "+env.Namespace)
	cmd := exec.Command(bin, "kubectl", "--kubeconfig", env.Kubeconfig,
		"apply", "-f", "-", "--server-side", "--dry-run=server", "-o", "name")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply (config/vcluster) --dry-run=server: %v\n%s", err, out)
	}
	for _, want := range []string{"serviceaccount/berth-vcluster-team-a", "role.rbac.authorization.k8s.io/berth-vcluster-team-a",
		"clusterrole.rbac.authorization.k8s.io/berth-vcluster-vcluster-team-a-team-a-nodes", "deployment.apps/berth-vcluster-team-a",
		"persistentvolumeclaim/berth-vcluster-team-a"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply -k config/vcluster did not include %s:\n%s", want, out)
		}
	}
}
