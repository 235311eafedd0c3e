package helmchart

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/berth-dev/berth/internal/fromkueue"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/vcluster/translate"
)

const dir = "../../" + Dir

// render is the chart rendered for namespace with vals, as objects.
func render(t *testing.T, namespace string, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(ch, namespace, vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode([]byte(out))
	if err != nil {
		t.Fatalf("decoding what the chart rendered: %v\n%s", err, out)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment", name)
	if u == nil {
		t.Fatalf("no Deployment %s rendered", name)
	}
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// helm lint --strict finds nothing, with the defaults and with every
// optional part on.
func TestLint(t *testing.T) {
	for _, vals := range []map[string]any{nil, everything()} {
		if err := Lint(dir, vals); err != nil {
			t.Errorf("helm lint with %v: %v", vals, err)
		}
	}
}

func everything() map[string]any {
	return map[string]any{
		"replicas": 3,
		"controller": map[string]any{"fairSharing": true, "manageJobsWithoutQueueName": true, "managedJobsNamespaceSelector": "team in (a,b)",
			"jobSetControllers": []any{"system:serviceaccount:js:manager"}, "kubeAPIQPS": 100, "kubeAPIBurst": 200,
			"origin": "manager-1", "workerLostTimeout": "2m", "dispatchSpreadAfter": "0s", "nodeFailureDelay": "1m", "logLevel": "debug",
			"admissionFairSharing": map[string]any{"halfLife": "2h", "samplingInterval": "30s", "resourceWeights": map[string]any{"nvidia.com/gpu": 10, "cpu": 0.5}},
			"integrations":         []any{"batch/job", "pod"},
			"deviceClassMappings": []any{map[string]any{"name": "example.com/gpu", "deviceClassNames": []any{"gpu.example.com", "big-gpu.example.com"}},
				map[string]any{"name": "example.com/nic", "deviceClassNames": []any{"nic.example.com"}}},
			"configuredKinds": []any{map[string]any{"group": "kubeflow.org", "version": "v2beta1", "kind": "MPIJob", "resource": "mpijobs",
				"suspend": "spec.runPolicy.suspend", "podSets": []any{map[string]any{"name": "worker", "template": "spec.mpiReplicaSpecs.Worker.template"}},
				"finished": map[string]any{"succeeded": []any{"Succeeded"}}}},
			"waitForPodsReady": map[string]any{"enabled": true, "timeout": "10m", "backoffBase": "30s", "backoffMax": "2h",
				"requeueLimit": 4, "blockAdmission": true},
			"leaderElection": map[string]any{"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "5s"}},
		"metrics":           map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		"priorityClassName": "system-cluster-critical",
		"vclusters":         []any{map[string]any{"name": "team-a"}, map[string]any{"name": "scratch", "storage": ""}},
		"certManager":       map[string]any{"enabled": true},
	}
}

// The defaults give what a platform team expects of a controller: two
// replicas that elect a leader, spread where they can be, at most one
// disrupted at a time, restricted to the least they need, and everything in
// the release's namespace.
func TestDefaults(t *testing.T) {
	objs := render(t, "queues", nil)
	d := deployment(t, objs, "berth-controller")
	if *d.Spec.Replicas != 2 {
		t.Errorf("%d replicas; want 2", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	for _, arg := range []string{"--leader-elect", "--namespace=queues", "--service-account=berth-controller", "--pod-ip=$(POD_IP)"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("controller args %v lack %s", c.Args, arg)
		}
	}
	if c.Image != "ghcr.io/berth-dev/berth:latest" {
		t.Errorf("image %s; want the chart's appVersion as tag", c.Image)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("not restricted: pod %+v, container %+v", psc, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no resource requests: %+v", c.Resources)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("want preferred (not required) anti-affinity, so one node still runs both: %+v", a)
	}
	if pdb := find(objs, "PodDisruptionBudget", "berth-controller"); pdb == nil {
		t.Error("no PodDisruptionBudget")
	}
	for _, kind := range []string{"CustomResourceDefinition", "ServiceMonitor", "Namespace", "Certificate", "Issuer"} {
		for _, o := range objs {
			if o.GetKind() == kind {
				t.Errorf("%s %s rendered by default", kind, o.GetName())
			}
		}
	}
	for _, o := range objs {
		// kube-system: the Role and RoleBinding to read the front-proxy CA.
		if ns := o.GetNamespace(); ns != "" && ns != "queues" && !(ns == "kube-system" && o.GetName() == "berth-controller") {
			t.Errorf("%s %s in namespace %s; want the release's", o.GetKind(), o.GetName(), ns)
		}
	}
	api := find(objs, "APIService", "v1beta1.visibility.berth.dev")
	if ns, _, _ := unstructured.NestedString(api.Object, "spec", "service", "namespace"); ns != "queues" {
		t.Errorf("APIService names the Service in %q", ns)
	}
	hooks := find(objs, "MutatingWebhookConfiguration", "berth")
	webhooks, _, _ := unstructured.NestedSlice(hooks.Object, "webhooks")
	for _, w := range webhooks {
		if ns, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "service", "namespace"); ns != "queues" {
			t.Errorf("webhook %v calls a Service in %q", w.(map[string]any)["name"], ns)
		}
	}
	role := find(objs, "Role", "berth-controller")
	if role == nil || role.GetNamespace() != "queues" {
		t.Errorf("the controller's Role: %v", role)
	}
}

// Values reach the controller as its flags (internal/cli checks each is
// one it has), and optional parts appear when asked for.
func TestValues(t *testing.T) {
	objs := render(t, "berth-system", everything())
	d := deployment(t, objs, "berth-controller")
	for _, arg := range []string{"--fair-sharing", "--manage-jobs-without-queue-name", "--kube-api-qps=100", "--kube-api-burst=200",
		"--origin=manager-1", "--worker-lost-timeout=2m", "--dispatch-spread-after=0s", "--zap-log-level=debug", "--leader-elect-lease-duration=30s",
		"--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=5s", "--wait-for-pods-ready", "--pods-ready-timeout=10m",
		"--pods-ready-backoff-base=30s", "--pods-ready-backoff-max=2h", "--pods-ready-requeue-limit=4", "--pods-ready-block-admission", "--integrations=batch/job,pod",
		"--managed-jobs-namespace-selector=team in (a,b)", "--jobset-controllers=system:serviceaccount:js:manager",
		"--device-class-mappings=example.com/gpu=gpu.example.com,big-gpu.example.com;example.com/nic=nic.example.com"} {
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, arg) {
			t.Errorf("args %v lack %s", d.Spec.Template.Spec.Containers[0].Args, arg)
		}
	}
	if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("replicas %d, priority class %q", *d.Spec.Replicas, d.Spec.Template.Spec.PriorityClassName)
	}
	if find(objs, "ServiceMonitor", "berth-controller") == nil {
		t.Error("no ServiceMonitor")
	}
	// A virtual cluster with storage keeps its state in a claim; one
	// without, in an emptyDir.
	for name, claim := range map[string]bool{"team-a": true, "scratch": false} {
		if find(objs, "Namespace", "vcluster-"+name) == nil {
			t.Errorf("no namespace for virtual cluster %s", name)
		}
		vc := deployment(t, objs, "berth-vcluster-"+name)
		data := vc.Spec.Template.Spec.Volumes[0]
		if (data.PersistentVolumeClaim != nil) != claim || (find(objs, "PersistentVolumeClaim", "berth-vcluster-"+name) != nil) != claim {
			t.Errorf("virtual cluster %s: data volume %+v; want a claim: %v", name, data.VolumeSource, claim)
		}
		if vc.Namespace != "vcluster-"+name || vc.Spec.Template.Spec.ServiceAccountName != "berth-vcluster-"+name {
			t.Errorf("virtual cluster %s runs in %s as %s", name, vc.Namespace, vc.Spec.Template.Spec.ServiceAccountName)
		}
	}
	pvc := find(objs, "PersistentVolumeClaim", "berth-vcluster-team-a")
	if size, _, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage"); size != "5Gi" {
		t.Errorf("default storage %q; want 5Gi", size)
	}
}

// With certManager.enabled, cert-manager issues the webhooks' certificate
// into the Secret the controller mounts and serves as given, and its CA
// injector is asked to fill in both CA bundles; by default the controller
// makes its own and nothing asks for injection. An issuer of the cluster's
// replaces the chart's self-signed one.
func TestCertManager(t *testing.T) {
	injects := func(objs []*unstructured.Unstructured) []string {
		var asked []string
		for _, o := range objs {
			if from := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; from != "" {
				asked = append(asked, o.GetKind()+" "+from)
			}
		}
		slices.Sort(asked)
		return asked
	}
	if asked := injects(render(t, "queues", nil)); len(asked) > 0 {
		t.Errorf("by default, CA injection asked of %v", asked)
	}

	objs := render(t, "queues", map[string]any{"certManager": map[string]any{"enabled": true}})
	want := []string{"APIService queues/berth-webhook", "MutatingWebhookConfiguration queues/berth-webhook"}
	if asked := injects(objs); !slices.Equal(asked, want) {
		t.Errorf("CA injection asked of %v; want %v", asked, want)
	}
	cert := find(objs, "Certificate", "berth-webhook")
	if cert == nil || cert.GetNamespace() != "queues" {
		t.Fatalf("Certificate berth-webhook: %v", cert)
	}
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedStringMap(cert.Object, "spec", "issuerRef")
	if secretName != "berth-webhook-tls" || !slices.Contains(names, "berth-webhook.queues.svc") || !slices.Contains(names, "berth-visibility.queues.svc") { //nolint:gosec // G101: a Secret's name, no credential
		t.Errorf("Certificate: Secret %q, names %v", secretName, names)
	}
	if issuer["name"] != "berth-selfsigned" || issuer["kind"] != "Issuer" || find(objs, "Issuer", "berth-selfsigned") == nil {
		t.Errorf("Certificate's issuer %v; want the chart's self-signed Issuer, rendered", issuer)
	}
	pod := deployment(t, objs, "berth-controller").Spec.Template.Spec
	if args := pod.Containers[0].Args; !slices.Contains(args, "--webhook-cert-provided") || !slices.Contains(args, "--webhook-cert-dir=/certs") {
		t.Errorf("args %v; want the certificate served as provided, from /certs", args)
	}
	mounted := false
	for _, v := range pod.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName {
			for _, m := range pod.Containers[0].VolumeMounts {
				mounted = mounted || m.Name == v.Name && m.MountPath == "/certs" && m.ReadOnly
			}
		}
	}
	if !mounted {
		t.Errorf("Secret %s not mounted read-only at /certs: %+v, %+v", secretName, pod.Volumes, pod.Containers[0].VolumeMounts)
	}

	objs = render(t, "queues", map[string]any{"certManager": map[string]any{"enabled": true,
		"issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}}})
	issuer, _, _ = unstructured.NestedStringMap(find(objs, "Certificate", "berth-webhook").Object, "spec", "issuerRef")
	if issuer["name"] != "corp-ca" || issuer["kind"] != "ClusterIssuer" || issuer["group"] != "cert-manager.io" || find(objs, "Issuer", "berth-selfsigned") != nil {
		t.Errorf("with the cluster's issuer named: Certificate's issuer %v, and the chart's own rendered too: %v", issuer, find(objs, "Issuer", "berth-selfsigned") != nil)
	}
}

// A value the chart does not know, or one of the wrong shape, is refused
// with its name, rather than ignored.
func TestValuesRefused(t *testing.T) {
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vals map[string]any
		says string
	}{
		{map[string]any{"replica": 3}, "replica"},
		{map[string]any{"controller": map[string]any{"fairsharing": true}}, "fairsharing"},
		{map[string]any{"replicas": 0}, "replicas"},
		{map[string]any{"controller": map[string]any{"leaderElection": map[string]any{"leaseDuration": "15"}}}, "leaseDuration"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "Team_A"}}}, "name"},
		// What vcluster serve refuses (vcluster.ValidateName) the chart refuses.
		{map[string]any{"vclusters": []any{map[string]any{"name": "a-x-b"}}}, "name"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "x-team"}}}, "name"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "9team"}}}, "name"},
		{map[string]any{"vclusters": []any{map[string]any{"name": strings.Repeat("a", 33)}}}, "name"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "team", "priorityClass": "low"}}}, "queue"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "team", "allowHostAccess": true, "podSecurity": "restricted"}}}, "podSecurity"},
		{map[string]any{"vclusters": []any{map[string]any{"name": "team", "podSecurity": "privileged"}}}, "podSecurity"},
		{map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		{map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "ca", "kind": "Vault"}}}, "kind"},
		{map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"kind": "ClusterIssuer"}}}, "name"},
		{map[string]any{"controller": map[string]any{"integrations": []any{"batch/job", "mpijob"}}}, "integrations"},
		{map[string]any{"controller": map[string]any{"configuredKinds": []any{map[string]any{"group": "kubeflow.org", "version": "v2beta1",
			"kind": "MPIJob", "resource": "mpijobs", "suspend": "status.suspend", "podSets": []any{}, "finished": map[string]any{}}}}}, "suspend"},
		{map[string]any{"controller": map[string]any{"managedJobsNamespaceSelector": "team=a"}}, "read only with controller.manageJobsWithoutQueueName"},
		// Written into a CEL string: no quote may close it.
		{map[string]any{"controller": map[string]any{"jobSetControllers": []any{"x' || true || '"}}}, "jobSetControllers"},
		// Read only when enabled: refused rather than ignored.
		{map[string]any{"controller": map[string]any{"waitForPodsReady": map[string]any{"timeout": "10m"}}}, "timeout"},
		{map[string]any{"controller": map[string]any{"waitForPodsReady": map[string]any{"blockAdmission": true}}}, "blockAdmission"},
		{map[string]any{"controller": map[string]any{"waitForPodsReady": map[string]any{"enabled": true, "requeueLimit": -1}}}, "requeueLimit"},
	} {
		_, err := Render(ch, "berth-system", tc.vals)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("values %v: %v; want an error naming %s", tc.vals, err, tc.says)
		}
	}
}

// kustomize installs what Helm does: config/deploy/berth.yaml is the
// chart rendered with its defaults (make generate writes it).
func TestKustomizeIsTheChart(t *testing.T) {
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(ch, "berth-system", map[string]any{"image": map[string]any{"tag": "latest"}})
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../../config/deploy/berth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(have), want) {
		t.Error("config/deploy/berth.yaml is not the chart rendered with its defaults: run make generate")
	}
	var k struct{ Resources []string }
	data, err := os.ReadFile("../../config/deploy/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.Resources, []string{"../crd", "namespace.yaml", "berth.yaml"}) {
		t.Errorf("config/deploy installs %v; want the CRDs, the namespace and the rendered chart", k.Resources)
	}
}

// The chart's CRDs are berth's, byte for byte.
func TestCRDsAreBerths(t *testing.T) {
	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	crds := ch.CRDObjects()
	bases, err := os.ReadDir("../../config/crd/bases")
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(bases) {
		t.Fatalf("the chart has %d CRDs, config/crd/bases %d", len(crds), len(bases))
	}
	for _, c := range crds {
		want, err := os.ReadFile("../../config/crd/bases/" + filepath.Base(c.Filename))
		if err != nil {
			t.Errorf("chart CRD %s: %v", c.Filename, err)
			continue
		}
		if string(want) != string(c.File.Data) {
			t.Errorf("chart CRD %s differs from config/crd/bases: run make generate", c.Filename)
		}
	}
}

// dashboard.enabled deploys the dashboard: on the pod's loopback only (no
// Service), as a ServiceAccount that may read and nothing else, restricted
// like the controller; allowActions reaches it as its flag.
func TestDashboard(t *testing.T) {
	if find(render(t, "berth-system", nil), "Deployment", "berth-dashboard") != nil {
		t.Error("the dashboard is deployed by default")
	}
	objs := render(t, "berth-system", map[string]any{"dashboard": map[string]any{"enabled": true, "allowActions": true}})
	d := deployment(t, objs, "berth-dashboard")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"dashboard", "--in-cluster", "--listen=127.0.0.1:8080", "--allow-actions"}) {
		t.Errorf("args %v", c.Args)
	}
	if pod.ServiceAccountName != "berth-dashboard" || pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil ||
		c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("not restricted: %+v %+v", pod.SecurityContext, c.SecurityContext)
	}
	if d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "berth-dashboard" {
		t.Errorf("selector %v would take the controller's pods", d.Spec.Selector.MatchLabels)
	}
	for _, o := range objs {
		if o.GetKind() == "Service" && strings.Contains(o.GetName(), "dashboard") {
			t.Errorf("Service %s: the dashboard is for port-forward only", o.GetName())
		}
	}
	role := find(objs, "ClusterRole", "berth-dashboard")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
		for _, v := range verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("the dashboard's role may %s: %v", v, r)
			}
		}
	}
	if err := Lint(dir, map[string]any{"dashboard": map[string]any{"enabled": true}}); err != nil {
		t.Error(err)
	}
}

// The JobSet controller's users, from the values, are the ones the policy
// on a JobSet's Jobs lets start them (and grow them), in both its rules.
func TestJobSetControllers(t *testing.T) {
	objs := render(t, "berth-system", map[string]any{"controller": map[string]any{
		"jobSetControllers": []any{"system:serviceaccount:js:manager", "jobset-admin"}}})
	p := find(objs, "ValidatingAdmissionPolicy", "jobs-of-jobsets.guard.berth.dev")
	if p == nil {
		t.Fatal("no policy jobs-of-jobsets.guard.berth.dev")
	}
	validations, _, _ := unstructured.NestedSlice(p.Object, "spec", "validations")
	n := 0
	for _, v := range validations {
		if strings.Contains(v.(map[string]any)["expression"].(string), "request.userInfo.username in ['system:serviceaccount:js:manager', 'jobset-admin']") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d of the policy's rules let the values' JobSet controllers through; want 2 (start, grow): %v", n, validations)
	}
}

// A virtual cluster the chart installs is the one berth vcluster create
// makes with the same settings: vcluster serve gets the same flags
// (translate.Policy.Args), its namespace enforces the same Pod Security
// level, and the same NetworkPolicy fences its tenants in.
func TestVClustersAreWhatCreateMakes(t *testing.T) {
	policy := translate.Policy{Queue: "tenants", PriorityClass: "low", PodSecurity: translate.PodSecurityRestricted,
		RuntimeClasses: []string{"kata"}, Placement: translate.Placement{NodeLabels: []string{"example.com/gpu"}, Tolerations: []string{"dedicated"}, Schedulers: []string{"gang"}}}
	objs := render(t, "berth-system", map[string]any{"vclusters": []any{map[string]any{"name": "team-a",
		"queue": "tenants", "priorityClass": "low", "podSecurity": "restricted", "runtimeClasses": []any{"kata"},
		"allowNodeLabels": []any{"example.com/gpu"}, "allowTolerations": []any{"dedicated"}, "allowSchedulers": []any{"gang"}}}})
	d := deployment(t, objs, "berth-vcluster-team-a")
	args := d.Spec.Template.Spec.Containers[0].Args
	if want := append([]string{"vcluster", "serve", "team-a", "--data-dir=/data/state", "--port=6443"}, policy.Args()...); !slices.Equal(args, want) {
		t.Errorf("vcluster serve %v; want %v", args, want)
	}
	ns := find(objs, "Namespace", "vcluster-team-a")
	for k, v := range translate.NamespaceLabels(policy) {
		if got := ns.GetLabels()[k]; got != v {
			t.Errorf("namespace label %s=%q; want %q", k, got, v)
		}
	}
	u := find(objs, "NetworkPolicy", translate.NetworkPolicyName)
	if u == nil {
		t.Fatal("no NetworkPolicy for virtual cluster team-a")
	}
	var got networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
		t.Fatal(err)
	}
	want := translate.NetworkPolicy("team-a", "vcluster-team-a")
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || got.Namespace != want.Namespace || !maps.Equal(got.Labels, want.Labels) {
		t.Errorf("the chart's NetworkPolicy:\n%+v\nwant what berth vcluster create makes:\n%+v", got, want)
	}
	host := render(t, "berth-system", map[string]any{"vclusters": []any{map[string]any{"name": "open", "allowHostAccess": true}}})
	if l := find(host, "Namespace", "vcluster-open").GetLabels()["pod-security.kubernetes.io/enforce"]; l != "privileged" {
		t.Errorf("a virtual cluster with host access: namespace enforces %q, want privileged", l)
	}
}

// controller.configuredKinds becomes the file the controller reads, mounted
// and named by --configured-kinds, and the roles configured.Rules says the
// controller needs for those kinds, bound to its ServiceAccount.
func TestConfiguredKinds(t *testing.T) {
	var objs []*unstructured.Unstructured
	var want []configured.Compiled
	// The MPIJob example, and the RayCluster as `berth up --with ray`
	// describes it (the file the docs tell a chart user to pass).
	for _, name := range []string{"../../config/addons/ray/kinds.yaml", "../../examples/configured/kinds.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var file map[string]any
		if err := yaml.Unmarshal(data, &file); err != nil {
			t.Fatal(err)
		}
		if want, err = configured.Parse(data); err != nil {
			t.Fatal(err)
		}
		objs = render(t, "queues", map[string]any{"controller": map[string]any{"configuredKinds": file["kinds"]}})

		cm := find(objs, "ConfigMap", "berth-configured-kinds")
		if cm == nil {
			t.Fatalf("%s: no ConfigMap berth-configured-kinds", name)
		}
		content, _, _ := unstructured.NestedString(cm.Object, "data", "kinds.yaml")
		got, err := configured.Parse([]byte(content))
		if err != nil {
			t.Fatalf("%s: the rendered file does not parse: %v\n%s", name, err, content)
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: the rendered file reads as %+v, want %+v", name, got, want)
		}
	}

	d := deployment(t, objs, "berth-controller")
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--configured-kinds=/etc/berth/configured-kinds/kinds.yaml") {
		t.Errorf("controller args %v lack --configured-kinds", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "configured-kinds" && m.MountPath == "/etc/berth/configured-kinds"
	}) || !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.ConfigMap != nil && v.ConfigMap.Name == "berth-configured-kinds"
	}) {
		t.Errorf("the file is not mounted: %+v %+v", c.VolumeMounts, d.Spec.Template.Spec.Volumes)
	}
	if d.Spec.Template.Annotations["berth.dev/configured-kinds-sha256"] == "" {
		t.Error("a change of the kinds would not restart the controller")
	}

	role := find(objs, "ClusterRole", "berth-configured-kinds")
	if role == nil {
		t.Fatal("no ClusterRole berth-configured-kinds")
	}
	var cr rbacv1.ClusterRole
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, &cr); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(cr.Rules, configured.Rules(want)) {
		t.Errorf("rules %+v, want configured.Rules' %+v", cr.Rules, configured.Rules(want))
	}
	binding := find(objs, "ClusterRoleBinding", "berth-configured-kinds")
	if binding == nil {
		t.Fatal("no ClusterRoleBinding berth-configured-kinds")
	}
	var crb rbacv1.ClusterRoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(binding.Object, &crb); err != nil {
		t.Fatal(err)
	}
	if crb.RoleRef.Name != "berth-configured-kinds" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "berth-controller" || crb.Subjects[0].Namespace != "queues" {
		t.Errorf("binding %+v", crb)
	}

	// Without kinds, nothing of it.
	for _, o := range render(t, "queues", nil) {
		if o.GetName() == "berth-configured-kinds" {
			t.Errorf("%s berth-configured-kinds rendered without configured kinds", o.GetKind())
		}
	}
}

// controller.configuredKindsOf adds the kinds of berth's addons by name,
// after those of controller.configuredKinds, as the files in
// config/addons describe them; a name the chart has no file for is
// refused by its schema.
func TestConfiguredKindsOf(t *testing.T) {
	var files [][]byte
	for _, name := range []string{"../../examples/configured/kinds.yaml", "../../config/addons/ray/kinds.yaml", "../../config/addons/training-operator/kinds.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	all, err := configured.Merge(files...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := configured.Parse(all)
	if err != nil {
		t.Fatal(err)
	}
	var mpi map[string]any
	if err := yaml.Unmarshal(files[0], &mpi); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "queues", map[string]any{"controller": map[string]any{"configuredKinds": mpi["kinds"],
		"configuredKindsOf": []any{"ray", "training-operator"}}})
	cm := find(objs, "ConfigMap", "berth-configured-kinds")
	if cm == nil {
		t.Fatal("no ConfigMap berth-configured-kinds")
	}
	content, _, _ := unstructured.NestedString(cm.Object, "data", "kinds.yaml")
	got, err := configured.Parse([]byte(content))
	if err != nil {
		t.Fatalf("the rendered file does not parse: %v\n%s", err, content)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the rendered file reads as %d kinds %+v, want the %d of the three files", len(got), got, len(want))
	}
	role := find(objs, "ClusterRole", "berth-configured-kinds")
	var cr rbacv1.ClusterRole
	if role == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, &cr) != nil ||
		!equality.Semantic.DeepEqual(cr.Rules, configured.Rules(want)) {
		t.Errorf("the role of the kinds: %+v, want configured.Rules' %+v", cr.Rules, configured.Rules(want))
	}
	if c := deployment(t, objs, "berth-controller").Spec.Template.Spec.Containers[0]; !slices.Contains(c.Args, "--configured-kinds=/etc/berth/configured-kinds/kinds.yaml") {
		t.Errorf("controller args %v lack --configured-kinds", c.Args)
	}
	// Alone, without configuredKinds.
	objs = render(t, "queues", map[string]any{"controller": map[string]any{"configuredKindsOf": []any{"training-operator"}}})
	if cm := find(objs, "ConfigMap", "berth-configured-kinds"); cm == nil {
		t.Error("configuredKindsOf alone: no ConfigMap berth-configured-kinds")
	}

	ch, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Render(ch, "queues", map[string]any{"controller": map[string]any{"configuredKindsOf": []any{"mpi"}}})
	if err == nil || !strings.Contains(err.Error(), "configuredKindsOf") {
		t.Errorf("an unknown name: %v; want it refused", err)
	}
}

// What `berth import` makes of a Kueue Configuration is values the chart
// takes (its schema, then its templates), and says what it said: Kueue's
// frameworks as berth's integrations and configured kinds, the namespaces
// queued without a label, all-or-nothing start.
func TestAKueueConfigurationImportsToValuesTheChartTakes(t *testing.T) {
	f, err := os.Open("../fromkueue/testdata/configuration-v1beta1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := fromkueue.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fromkueue.ImportConfiguration(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	// As helm reads a values file.
	data, err := yaml.Marshal(s.Values)
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(data, &vals); err != nil {
		t.Fatal(err)
	}
	if err := Lint(dir, vals); err != nil {
		t.Fatalf("the chart refuses the imported values: %v", err)
	}
	objs := render(t, "queues", vals)
	args := deployment(t, objs, "berth-controller").Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--integrations=batch/job,jobset.x-k8s.io/jobset,trainer.kubeflow.org/trainjob,pod", "--manage-jobs-without-queue-name",
		"--managed-jobs-namespace-selector=kubernetes.io/metadata.name notin (kube-system,kueue-system)", "--wait-for-pods-ready",
		"--configured-kinds=/etc/berth/configured-kinds/kinds.yaml"} {
		if !slices.Contains(args, want) {
			t.Errorf("controller args %v lack %s", args, want)
		}
	}
	content, _, _ := unstructured.NestedString(find(objs, "ConfigMap", "berth-configured-kinds").Object, "data", "kinds.yaml")
	kinds, err := configured.Parse([]byte(content))
	if err != nil {
		t.Fatalf("the configured kinds do not parse: %v", err)
	}
	var names []string
	for _, k := range kinds {
		names = append(names, k.Kind)
	}
	if got := strings.Join(names, ","); got != "MPIJob,RayCluster,RayJob,PyTorchJob" {
		t.Errorf("configured kinds %s", got)
	}
}
