package translate

import (
	"maps"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
)

var opts = Options{VCluster: "vc", HostNamespace: "host"}

// podWrapper builds virtual Pods for tests.
type podWrapper struct{ corev1.Pod }

func makePod(name, ns string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}}
}

func (p *podWrapper) Label(k, v string) *podWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

func (p *podWrapper) Annotation(k, v string) *podWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

func (p *podWrapper) Volume(v corev1.Volume) *podWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v)
	return p
}

func (p *podWrapper) Mount(name string) *podWrapper {
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
	return p
}

func (p *podWrapper) Obj() *corev1.Pod { return &p.Pod }

// The virtual API server's own token volume, as it adds it to every Pod.
var tokenVolume = corev1.Volume{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
	Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}}}}}

func TestHostPodRewritesEveryReference(t *testing.T) {
	v := makePod("web", "shop").
		Volume(corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}).
		Volume(corev1.Volume{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}).
		Volume(tokenVolume).Mount("conf").Mount(tokenVolume.Name).Obj()
	v.Spec.ServiceAccountName = "builder"
	v.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	v.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}}}
	v.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}}}}
	prio := int32(1000)
	v.Spec.Priority, v.Spec.PriorityClassName = &prio, "tenant-high"

	h, err := HostPod(v, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := func(n string) string { return n + "-x-shop-x-vc" }
	if h.Name != host("web") || h.Namespace != "host" {
		t.Errorf("host pod %s/%s, want host/%s", h.Namespace, h.Name, host("web"))
	}
	if got := h.Spec.Volumes; len(got) != 2 || got[0].ConfigMap.Name != host("conf") || got[1].Secret.SecretName != host("creds") {
		t.Errorf("volumes %+v: want conf and creds renamed, the token volume gone", got)
	}
	if m := h.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != "conf" {
		t.Errorf("mounts %+v: want only conf", m)
	}
	c := h.Spec.Containers[0]
	if c.Env[0].ValueFrom.SecretKeyRef.Name != host("env-secret") || c.EnvFrom[0].ConfigMapRef.Name != host("env-cm") {
		t.Errorf("env not renamed: %+v %+v", c.Env, c.EnvFrom)
	}
	if h.Spec.ServiceAccountName != host("builder") || *h.Spec.AutomountServiceAccountToken {
		t.Errorf("service account %q automount %v: want %q without a token", h.Spec.ServiceAccountName, *h.Spec.AutomountServiceAccountToken, host("builder"))
	}
	if h.Spec.ImagePullSecrets[0].Name != host("pull") {
		t.Errorf("image pull secret %q", h.Spec.ImagePullSecrets[0].Name)
	}
	if h.Spec.Priority != nil || h.Spec.PriorityClassName != "" {
		t.Errorf("the virtual priority class went to the host: %v %q", h.Spec.Priority, h.Spec.PriorityClassName)
	}
	if a := h.Annotations; a[NameAnnotation] != "web" || a[NamespaceAnnotation] != "shop" || a[UIDAnnotation] != "uid-web" {
		t.Errorf("origin annotations %v", a)
	}
	if ns, name, uid, ok := Origin(h, "vc"); !ok || ns != "shop" || name != "web" || uid != "uid-web" {
		t.Errorf("Origin = %s/%s %s %v", ns, name, uid, ok)
	}
	if v.Spec.Volumes[0].ConfigMap.Name != "conf" {
		t.Error("HostPod changed the virtual pod")
	}

	refs := RefsOf(v)
	if strings.Join(refs.ConfigMaps, ",") != "conf,env-cm" || strings.Join(refs.Secrets, ",") != "creds,env-secret,pull" || refs.ServiceAccount != "builder" {
		t.Errorf("RefsOf = %+v", refs)
	}
}

// A tenant controls every name, label and annotation of its objects; none
// may steer the host's berth at another object, or the syncer at anything.
func TestHostPodDropsKeysThatMimicBerthsOwn(t *testing.T) {
	v := makePod("p", "ns").
		Label(Label, "other-vc").Label(NamespaceLabel, "kube-system").
		Label(berthv1.PrebuiltWorkloadLabel, "someone-elses-workload").
		Label(berthv1.MultiClusterOriginLabel, "manager").
		Label("x.berth.dev/anything", "1").Label("kueue.x-k8s.io/pod-group-name", "g").
		Label(berthv1.QueueNameLabel, "team-a").Label("app", "web").
		Annotation(UIDAnnotation, "victim-uid").Annotation(NameAnnotation, "victim").
		Annotation(berthv1.PodGroupTotalCountAnnotation, "2").
		Annotation("berth.dev/sim-duration", "1s").Obj()
	h, err := HostPod(v, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{Label: "vc", NamespaceLabel: "ns", "app": "web",
		berthv1.PodGroupNameLabel: HostName("g", "ns", "vc")}
	if len(h.Labels) != len(want) {
		t.Errorf("labels %v, want %v", h.Labels, want)
	}
	for k, v := range want {
		if h.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, h.Labels[k], v)
		}
	}
	if h.Annotations[UIDAnnotation] != "uid-p" || h.Annotations[NameAnnotation] != "p" ||
		h.Annotations[berthv1.PodGroupTotalCountAnnotation] != "2" || h.Annotations["berth.dev/sim-duration"] != "1s" {
		t.Errorf("annotations %v", h.Annotations)
	}
}

// A tenant's LeaderWorkerSet pods (labelled as LeaderWorkerSet's controller
// labels them) are a pod group named in their virtual namespace: two
// namespaces' LeaderWorkerSets of one name share a host namespace, never a
// group.
func TestHostPodNamesALeaderWorkerSetsGroupInItsNamespace(t *testing.T) {
	lwsPod := func(ns string) *corev1.Pod {
		return makePod("infer-0-1", ns).Label("leaderworkerset.sigs.k8s.io/name", "infer").
			Label("leaderworkerset.sigs.k8s.io/group-index", "0").Annotation("leaderworkerset.sigs.k8s.io/size", "3").Obj()
	}
	a, err := HostPod(lwsPod("a"), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := HostPod(lwsPod("b"), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Labels[berthv1.PodGroupNameLabel] != HostName("lws-infer-0", "a", "vc") || a.Annotations[berthv1.PodGroupTotalCountAnnotation] != "3" {
		t.Errorf("host pod of namespace a: group %q of %q; want %q of 3", a.Labels[berthv1.PodGroupNameLabel],
			a.Annotations[berthv1.PodGroupTotalCountAnnotation], HostName("lws-infer-0", "a", "vc"))
	}
	if a.Labels[berthv1.PodGroupNameLabel] == b.Labels[berthv1.PodGroupNameLabel] {
		t.Errorf("two namespaces' LeaderWorkerSets share pod group %q on the host", a.Labels[berthv1.PodGroupNameLabel])
	}
	if g, _, _ := pods.Group(a); g != a.Labels[berthv1.PodGroupNameLabel] {
		t.Errorf("the host's berth reads group %q; want the syncer's %q", g, a.Labels[berthv1.PodGroupNameLabel])
	}
}

func TestHostPodQueueOptionOverridesTheTenants(t *testing.T) {
	v := makePod("p", "ns").Label(berthv1.KueueQueueNameLabel, "elsewhere").Obj()
	o := opts
	o.Queue = "tenants"
	four := int32(4)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns"}, Spec: batchv1.JobSpec{Parallelism: &four, Completions: &four}}
	h, err := HostPod(v, o, JobGroup(job, "vc"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Labels[berthv1.QueueNameLabel] != "tenants" || h.Labels[berthv1.KueueQueueNameLabel] != "" {
		t.Errorf("labels %v: want only queue tenants", h.Labels)
	}
	if h.Labels[berthv1.PodGroupNameLabel] != HostName("job-train", "ns", "vc") || h.Annotations[berthv1.PodGroupTotalCountAnnotation] != "4" {
		t.Errorf("group %v %v", h.Labels, h.Annotations)
	}
}

func TestHostPodRefusesHostAccessUnlessAllowed(t *testing.T) {
	priv := true
	v := makePod("p", "ns").Volume(corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}).Obj()
	v.Spec.HostNetwork = true
	v.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &priv}
	v.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
	_, err := HostPod(v, opts, nil)
	if err == nil {
		t.Fatal("HostPod accepted a privileged pod with hostPath, hostNetwork and a host port")
	}
	for _, f := range []string{"pod ns/p", "spec.hostNetwork", "spec.volumes[0].hostPath", "spec.containers[0].securityContext.privileged",
		"spec.containers[0].ports[0].hostPort", "--allow-host-access"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %s", err, f)
		}
	}
	o := opts
	o.AllowHostAccess = true
	if _, err := HostPod(v, o, nil); err != nil {
		t.Errorf("with host access allowed: %v", err)
	}
}

func TestHostPodRefusesWhatItCannotRun(t *testing.T) {
	v := makePod("p", "ns").Volume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}).Obj()
	_, err := HostPod(v, opts, nil)
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[0]") {
		t.Fatalf("HostPod = %v, want spec.volumes[0] refused", err)
	}
	v.Spec.NodeName = "node-1"
	if err := CheckNew(v); err == nil || !strings.Contains(err.Error(), "spec.nodeName") {
		t.Fatalf("CheckNew = %v, want spec.nodeName refused", err)
	}
}

func TestHostUpdateKeepsWhatTheHostAdded(t *testing.T) {
	v := makePod("p", "ns").Label("app", "web").Obj()
	want, _ := HostPod(v, opts, nil)
	cur := want.DeepCopy()
	cur.Labels["berth.dev/topology-placed"] = "true"
	cur.Finalizers = []string{berthv1.PodFinalizer}
	cur.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: berthv1.AdmissionGate}}
	if _, changed := HostUpdate(want, cur); changed {
		t.Fatal("HostUpdate changed a host pod the virtual pod matches")
	}
	v.Labels["app"] = "api"
	v.Spec.Containers[0].Image = "busybox:2"
	want, _ = HostPod(v, opts, nil)
	got, changed := HostUpdate(want, cur)
	if !changed || got.Labels["app"] != "api" || got.Spec.Containers[0].Image != "busybox:2" {
		t.Fatalf("HostUpdate = %v %v %s", changed, got.Labels, got.Spec.Containers[0].Image)
	}
	if got.Labels["berth.dev/topology-placed"] != "true" || len(got.Spec.SchedulingGates) != 1 || len(got.Finalizers) != 1 {
		t.Errorf("HostUpdate dropped what the host added: %v %v %v", got.Labels, got.Spec.SchedulingGates, got.Finalizers)
	}
}

// Lesson 4: the host pod is Guaranteed (a LimitRange gave it limits), the
// virtual one BestEffort; copying the host's qosClass would make every
// status write fail, and the virtual pod would hang in Pending.
func TestPodStatusNeverCopiesWhatTheVirtualAPIServerOwns(t *testing.T) {
	now := metav1.Now()
	host := corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSGuaranteed, ObservedGeneration: 3,
		HostIP: "10.0.0.1", PodIP: "10.1.0.1", StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, ObservedGeneration: 3}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Ready: true,
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	virtual := corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort, ObservedGeneration: 1}
	got, changed := PodStatus(host, virtual)
	if !changed {
		t.Fatal("PodStatus saw no change")
	}
	if got.QOSClass != corev1.PodQOSBestEffort || got.ObservedGeneration != 1 || got.Conditions[0].ObservedGeneration != 0 {
		t.Errorf("PodStatus copied what the virtual API server owns: qos %s, observedGeneration %d, condition's %d",
			got.QOSClass, got.ObservedGeneration, got.Conditions[0].ObservedGeneration)
	}
	if got.Phase != corev1.PodRunning || got.PodIP != "10.1.0.1" || !got.ContainerStatuses[0].Ready || got.ContainerStatuses[0].Resources != nil {
		t.Errorf("PodStatus = %+v", got)
	}
	if _, again := PodStatus(host, got); again {
		t.Error("PodStatus wants a write when nothing changed")
	}
}

func TestHostSecretRefusesServiceAccountTokens(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "berth-vcluster-vc"}}, Type: corev1.SecretTypeServiceAccountToken}
	if _, err := HostSecret(s, opts); err == nil || !strings.Contains(err.Error(), "secret ns/t") {
		t.Fatalf("HostSecret = %v, want a service account token refused", err)
	}
}

func TestOriginIgnoresOtherVirtualClustersAndForgeries(t *testing.T) {
	h, _ := HostPod(makePod("p", "ns").Obj(), opts, nil)
	if _, _, _, ok := Origin(h, "other"); ok {
		t.Error("a host pod of vc was taken for one of other")
	}
	h.Name = "victim-x-ns-x-vc"
	if _, _, _, ok := Origin(h, "vc"); ok {
		t.Error("a host object whose annotations do not give its name was taken as synced")
	}
}

func TestNodeChangedIgnoresHeartbeats(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}}
	have := VirtualNode(host, nil)
	host.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time0)
	if l, s := NodeChanged(VirtualNode(host, nil), have); l || s {
		t.Errorf("NodeChanged = %v %v on a heartbeat alone", l, s)
	}
	host.Status.Conditions[0].Status = corev1.ConditionFalse
	if _, s := NodeChanged(VirtualNode(host, nil), have); !s {
		t.Error("NodeChanged missed a node going NotReady")
	}
}

var time0 = time.Unix(0, 0)

// A virtual Node shows its tenants what helps them read their Pods (name,
// capacity, readiness, OS and architecture) and the labels they may select
// nodes by, and none of the host's addresses, versions, machine identifiers
// or other labels.
func TestVirtualNodeShowsOnlyWhatTheHostAllows(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
		"gpu": "a100", "topology.kubernetes.io/zone": "rack-7", "node-role.kubernetes.io/control-plane": ""}},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.7"}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", KernelVersion: "6.1.0-cloud", OSImage: "Debian 12", MachineID: "abc",
				SystemUUID: "uuid", BootID: "boot", ContainerRuntimeVersion: "containerd://1.7", OperatingSystem: "linux", Architecture: "amd64"},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}
	v := VirtualNode(host, []string{"gpu"})
	if want := map[string]string{"gpu": "a100", corev1.LabelHostname: "n1", NodeLabel: "true"}; !maps.Equal(v.Labels, want) {
		t.Errorf("labels %v, want %v", v.Labels, want)
	}
	if want := (corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"}); v.Status.NodeInfo != want || len(v.Status.Addresses) != 0 {
		t.Errorf("node info %+v, addresses %v; want the OS and architecture alone", v.Status.NodeInfo, v.Status.Addresses)
	}
	if !v.Status.Capacity.Cpu().Equal(resource.MustParse("8")) {
		t.Errorf("capacity %v", v.Status.Capacity)
	}
}

func TestVirtualEventIsAboutTheVirtualPod(t *testing.T) {
	v := makePod("web", "shop").Obj()
	h, _ := HostPod(v, opts, nil)
	he := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: h.Name + ".18a2b3c4d5e6f708", Namespace: "host"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "host", Name: h.Name, UID: "host-uid"},
		Reason:         "Scheduled", Message: "assigned", Type: corev1.EventTypeNormal, Count: 1}
	ve := VirtualEvent(he, v)
	if ve.Name != "web.18a2b3c4d5e6f708" || ve.Namespace != "shop" || ve.InvolvedObject.Name != "web" || ve.InvolvedObject.UID != v.UID {
		t.Fatalf("virtual event %s/%s about %+v", ve.Namespace, ve.Name, ve.InvolvedObject)
	}
	if EventChanged(VirtualEvent(he, v), ve) {
		t.Error("EventChanged on an unchanged event")
	}
	he.Count = 2
	if !EventChanged(VirtualEvent(he, v), ve) {
		t.Error("EventChanged missed a count")
	}
}

func TestJobGroupIsTheGangThatRunsAtOnce(t *testing.T) {
	job := func(parallelism, completions *int32) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
			Spec: batchv1.JobSpec{Parallelism: parallelism, Completions: completions}}
	}
	n := func(v int32) *int32 { return &v }
	for _, c := range []struct {
		name                     string
		parallelism, completions *int32
		want                     int32 // 0: no group
	}{
		{"indexed gang", n(4), n(4), 4},
		{"fewer completions than parallelism", n(4), n(2), 2},
		{"work queue", n(3), nil, 3},
		{"defaults", nil, nil, 1},
		{"waves", n(2), n(6), 0},
		{"suspended at zero", n(0), n(4), 0},
	} {
		g := JobGroup(job(c.parallelism, c.completions), "vc")
		switch {
		case c.want == 0 && g != nil:
			t.Errorf("%s: group %+v, want its pods queued one by one", c.name, g)
		case c.want != 0 && (g == nil || g.Count != c.want):
			t.Errorf("%s: group %+v, want %d pods", c.name, g, c.want)
		}
	}
}
