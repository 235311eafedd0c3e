package translate

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/pods"
)

// Options are a virtual cluster's settings, as the syncer was started with.
type Options struct {
	// VCluster is the virtual cluster's name (ValidateName).
	VCluster string
	// HostNamespace is where every host object goes.
	HostNamespace string
	Policy
	// Owner is put on every host object: deleting it deletes them all.
	Owner *metav1.OwnerReference
}

// Policy is what the host's admin decides for a virtual cluster's Pods;
// nothing a tenant writes changes it.
type Policy struct {
	// Queue, when set, is the host LocalQueue every tenant Pod is queued in;
	// without it only the host namespace's own setting (berth.dev/manage-pods)
	// queues them. A tenant's own queue labels never
	// reach the host.
	Queue string `json:"queue,omitempty"`
	// PriorityClass, when set, is the host WorkloadPriorityClass every
	// queued tenant Pod has; a tenant's own priority labels and
	// priorityClassName never reach the host.
	PriorityClass string `json:"priorityClass,omitempty"`
	// PodSecurity is the Pod Security level tenant Pods must meet:
	// PodSecurityBaseline ("" too) or PodSecurityRestricted.
	PodSecurity string `json:"podSecurity,omitempty"`
	// RuntimeClasses are the runtime classes tenant Pods may name; none
	// when empty.
	RuntimeClasses []string `json:"runtimeClasses,omitempty"`
	// AllowHostAccess lets tenant Pods do all that Pod Security's baseline
	// level forbids: hostPath volumes, host ports, the host's network, PID
	// or IPC namespace, privileged containers, added capabilities, and the
	// rest; and any runtime class, and any placement.
	AllowHostAccess bool `json:"allowHostAccess,omitempty"`
	// Placement is what tenant Pods may choose of their nodes: none of it
	// by default.
	Placement
}

// Validate refuses a policy that cannot be carried out, naming the flag.
func (p Policy) Validate() error {
	if err := ValidatePodSecurity(p.PodSecurity); err != nil {
		return fmt.Errorf("--pod-security: %w", err)
	}
	if p.PriorityClass != "" && p.Queue == "" {
		return fmt.Errorf("--priority-class %s: only queued Pods have a WorkloadPriorityClass; give --queue too", p.PriorityClass)
	}
	if p.AllowHostAccess && p.PodSecurity != "" {
		return fmt.Errorf("--pod-security %s with --allow-host-access: host access is Pod Security level privileged; give one or the other", p.PodSecurity)
	}
	return ValidatePlacement(p.Placement)
}

// Args are the command-line flags that carry p to `berth vcluster serve`
// and the syncer.
func (p Policy) Args() []string {
	var args []string
	for _, f := range []struct{ flag, value string }{
		{"queue", p.Queue}, {"priority-class", p.PriorityClass}, {"pod-security", p.PodSecurity},
		{"runtime-class", strings.Join(p.RuntimeClasses, ",")}, {"allow-node-label", strings.Join(p.NodeLabels, ",")},
		{"allow-toleration", strings.Join(p.Tolerations, ",")}, {"allow-scheduler", strings.Join(p.Schedulers, ",")},
	} {
		if f.value != "" {
			args = append(args, "--"+f.flag+"="+f.value)
		}
	}
	if p.AllowHostAccess {
		args = append(args, "--allow-host-access")
	}
	return args
}

// Group is the pod group a host Pod joins: Name on the host, and how many
// Pods it has.
type Group struct {
	Name  string
	Count int32
}

// JobGroup is the pod group of the Pods of a virtual Job: they are admitted
// on the host all together or not at all, as many as run at once (its
// parallelism); a Pod that ends is replaced within the group. A Job that
// needs more completions than it runs at once comes in waves, not one gang:
// its Pods are queued one by one (nil).
func JobGroup(job *batchv1.Job, vc string) *Group {
	n := int32(1)
	if job.Spec.Parallelism != nil {
		n = *job.Spec.Parallelism
	}
	if c := job.Spec.Completions; c != nil && *c > n || n < 1 {
		return nil
	}
	if c := job.Spec.Completions; c != nil {
		n = min(n, *c)
	}
	return &Group{Name: HostName("job-"+job.Name, job.Namespace, vc), Count: n}
}

// apiAccessPrefix names the projected volume the virtual API server adds to
// every Pod for its service account token. The token is the virtual
// cluster's; on the host it would name a host account, so it is left out
// (see HostPod).
const apiAccessPrefix = "kube-api-access-"

// HostPod is the host Pod that runs the virtual Pod v. Names it refers to
// (ConfigMaps, Secrets, its ServiceAccount, image pull Secrets) become their
// host names (see Refs for what must be synced first). It carries no service
// account token: tenant Pods cannot reach the virtual API server from the
// host yet. Its priority is the host's to give. group, if not nil, makes it
// a member of that pod group, else a tenant's pod group label is kept,
// renamed into this virtual cluster.
//
// A Pod asking for what berth cannot give it on the host, for what Pod
// Security at the virtual cluster's level forbids (access to the host
// among it) without Options.AllowHostAccess, or for a runtime class the
// host did not allow, is refused with every field at fault named.
func HostPod(v *corev1.Pod, o Options, group *Group) (*corev1.Pod, error) {
	h := &corev1.Pod{ObjectMeta: hostMeta(v.ObjectMeta, o), Spec: *v.Spec.DeepCopy()}
	h.Labels[NamespaceLabel] = v.Namespace
	if o.Queue != "" {
		h.Labels[berthv1.QueueNameLabel] = o.Queue
		if o.PriorityClass != "" {
			h.Labels[berthv1.PriorityClassLabel] = o.PriorityClass
		}
	}
	if group == nil {
		if name := firstOf(v.Labels, berthv1.PodGroupNameLabel, berthv1.KueuePodGroupNameLabel); name != "" {
			group = &Group{Name: HostName(name, v.Namespace, o.VCluster)}
			if n, err := strconv.ParseInt(firstOf(v.Annotations, berthv1.PodGroupTotalCountAnnotation,
				berthv1.KueuePodGroupTotalCountAnnotation), 10, 32); err == nil {
				group.Count = int32(n)
			}
		} else if name, size, err := pods.LeaderWorkerSetGroup(v); name != "" {
			// A LeaderWorkerSet's group, named in this virtual namespace:
			// the host's berth would otherwise group its pods with those of
			// a LeaderWorkerSet of the same name in another.
			group = &Group{Name: HostName(name, v.Namespace, o.VCluster)}
			if err == nil {
				group.Count = size
			}
		}
	}
	if group != nil {
		h.Labels[berthv1.PodGroupNameLabel] = group.Name
		// An unreadable count is left out, for the host's berth to refuse
		// with its own message.
		if group.Count > 0 {
			h.Annotations[berthv1.PodGroupTotalCountAnnotation] = strconv.Itoa(int(group.Count))
		}
	}

	errs := podSecurity(v, o)
	if err := runtimeClass(v, o); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, placement(v, o)...)
	spec := field.NewPath("spec")
	s := &h.Spec
	if len(v.Spec.SchedulingGates) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("schedulingGates"), "not supported in virtual clusters yet"))
	}
	if len(v.Spec.ResourceClaims) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("resourceClaims"), "not supported in virtual clusters yet"))
	}
	if !o.AllowHostAccess {
		for _, f := range []struct {
			on   bool
			name string
		}{{s.HostNetwork, "hostNetwork"}, {s.HostPID, "hostPID"}, {s.HostIPC, "hostIPC"}} {
			if f.on {
				errs = append(errs, hostAccess(spec.Child(f.name), o))
			}
		}
	}
	s.NodeName = ""
	// The virtual cluster's priority classes and runtime class overheads are
	// not the host's: the host resolves its own.
	s.Priority, s.PriorityClassName, s.PreemptionPolicy, s.Overhead = nil, "", nil, nil
	sa := s.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	s.ServiceAccountName = HostName(sa, v.Namespace, o.VCluster)
	s.DeprecatedServiceAccount = ""
	no := false
	s.AutomountServiceAccountToken = &no
	for i := range s.ImagePullSecrets {
		s.ImagePullSecrets[i].Name = HostName(s.ImagePullSecrets[i].Name, v.Namespace, o.VCluster)
	}

	dropped := map[string]bool{}
	var volumes []corev1.Volume
	for i, vol := range s.Volumes {
		p := spec.Child("volumes").Index(i)
		keep, verrs := hostVolume(&vol, p, v.Namespace, o)
		errs = append(errs, verrs...)
		if keep {
			volumes = append(volumes, vol)
		} else {
			dropped[vol.Name] = true
		}
	}
	s.Volumes = volumes
	for _, set := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range set.cs {
			errs = append(errs, hostContainer(&set.cs[i], spec.Child(set.name).Index(i), dropped, v.Namespace, o)...)
		}
	}
	if len(s.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("ephemeralContainers"), "not supported in virtual clusters yet"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("pod %s/%s: %w", v.Namespace, v.Name, errs.ToAggregate())
	}
	return h, nil
}

func hostAccess(p *field.Path, o Options) *field.Error {
	return field.Forbidden(p, fmt.Sprintf("reaches the host; virtual cluster %s was not created with --allow-host-access", o.VCluster))
}

// hostVolume rewrites a volume's references; keep is false for the virtual
// API server's token volume, which the host Pod goes without.
func hostVolume(vol *corev1.Volume, p *field.Path, ns string, o Options) (keep bool, errs field.ErrorList) {
	name := func(n string) string { return HostName(n, ns, o.VCluster) }
	src := &vol.VolumeSource
	switch {
	case src.EmptyDir != nil, src.DownwardAPI != nil:
	case src.ConfigMap != nil:
		src.ConfigMap.Name = name(src.ConfigMap.Name)
	case src.Secret != nil:
		src.Secret.SecretName = name(src.Secret.SecretName)
	case src.Projected != nil:
		if strings.HasPrefix(vol.Name, apiAccessPrefix) && hasToken(src.Projected) {
			return false, nil
		}
		for i, s := range src.Projected.Sources {
			sp := p.Child("projected", "sources").Index(i)
			switch {
			case s.ConfigMap != nil:
				s.ConfigMap.Name = name(s.ConfigMap.Name)
			case s.Secret != nil:
				s.Secret.Name = name(s.Secret.Name)
			case s.DownwardAPI != nil:
			default:
				errs = append(errs, field.Forbidden(sp, "only configMap, secret and downwardAPI sources are supported in virtual clusters yet"))
			}
		}
	case src.HostPath != nil:
		if !o.AllowHostAccess {
			errs = append(errs, hostAccess(p.Child("hostPath"), o))
		}
	default:
		errs = append(errs, field.Forbidden(p, "only emptyDir, configMap, secret, projected, downwardAPI and hostPath volumes are supported in virtual clusters yet"))
	}
	return true, errs
}

func hasToken(p *corev1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func hostContainer(c *corev1.Container, p *field.Path, dropped map[string]bool, ns string, o Options) field.ErrorList {
	var errs field.ErrorList
	name := func(n string) string { return HostName(n, ns, o.VCluster) }
	for i := range c.Env {
		if f := c.Env[i].ValueFrom; f != nil {
			if f.ConfigMapKeyRef != nil {
				f.ConfigMapKeyRef.Name = name(f.ConfigMapKeyRef.Name)
			}
			if f.SecretKeyRef != nil {
				f.SecretKeyRef.Name = name(f.SecretKeyRef.Name)
			}
			if f.FileKeyRef != nil {
				errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("valueFrom", "fileKeyRef"), "not supported in virtual clusters yet"))
			}
		}
	}
	for i := range c.EnvFrom {
		if r := c.EnvFrom[i].ConfigMapRef; r != nil {
			r.Name = name(r.Name)
		}
		if r := c.EnvFrom[i].SecretRef; r != nil {
			r.Name = name(r.Name)
		}
	}
	var mounts []corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if !dropped[m.Name] {
			mounts = append(mounts, m)
		}
	}
	c.VolumeMounts = mounts
	if !o.AllowHostAccess {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, hostAccess(p.Child("securityContext", "privileged"), o))
		}
		for i, port := range c.Ports {
			if port.HostPort != 0 {
				errs = append(errs, hostAccess(p.Child("ports").Index(i).Child("hostPort"), o))
			}
		}
	}
	return errs
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// Refs are the virtual objects a Pod refers to by name, in its namespace:
// they are synced to the host before the Pod, which cannot start without
// them.
type Refs struct {
	ConfigMaps, Secrets []string
	ServiceAccount      string
}

// RefsOf lists what v refers to, each name once, in order of appearance.
func RefsOf(v *corev1.Pod) Refs {
	var r Refs
	seen := map[string]bool{}
	add := func(list *[]string, kind, n string) {
		if n != "" && !seen[kind+"/"+n] {
			seen[kind+"/"+n] = true
			*list = append(*list, n)
		}
	}
	cm := func(n string) { add(&r.ConfigMaps, "cm", n) }
	sec := func(n string) { add(&r.Secrets, "secret", n) }
	for _, vol := range v.Spec.Volumes {
		switch {
		case vol.ConfigMap != nil:
			cm(vol.ConfigMap.Name)
		case vol.Secret != nil:
			sec(vol.Secret.SecretName)
		case vol.Projected != nil && !(strings.HasPrefix(vol.Name, apiAccessPrefix) && hasToken(vol.Projected)):
			for _, s := range vol.Projected.Sources {
				if s.ConfigMap != nil {
					cm(s.ConfigMap.Name)
				}
				if s.Secret != nil {
					sec(s.Secret.Name)
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{v.Spec.InitContainers, v.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if f := e.ValueFrom; f != nil && f.ConfigMapKeyRef != nil {
					cm(f.ConfigMapKeyRef.Name)
				}
				if f := e.ValueFrom; f != nil && f.SecretKeyRef != nil {
					sec(f.SecretKeyRef.Name)
				}
			}
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil {
					cm(e.ConfigMapRef.Name)
				}
				if e.SecretRef != nil {
					sec(e.SecretRef.Name)
				}
			}
		}
	}
	for _, s := range v.Spec.ImagePullSecrets {
		sec(s.Name)
	}
	r.ServiceAccount = v.Spec.ServiceAccountName
	if r.ServiceAccount == "" {
		r.ServiceAccount = "default"
	}
	return r
}

// CheckNew refuses a new virtual Pod that was placed on a node by hand: the
// host's scheduler places tenant Pods (the syncer binds the virtual Pod
// after). Checked before its host Pod is made, not after, when the syncer's
// own binding has set the node.
func CheckNew(v *corev1.Pod) error {
	if v.Spec.NodeName != "" {
		return fmt.Errorf("pod %s/%s: %w", v.Namespace, v.Name,
			field.Forbidden(field.NewPath("spec", "nodeName"), "the host's scheduler places tenant Pods"))
	}
	return nil
}

// HostUpdate carries what may change in a running virtual Pod to its host
// Pod: the tenant's labels and annotations, container images, the active
// deadline and added tolerations. Labels, annotations, gates and the like
// the host added itself are kept. It reports whether anything changed; the
// rest of a Pod's spec cannot change once it exists.
func HostUpdate(desired, current *corev1.Pod) (*corev1.Pod, bool) {
	out := current.DeepCopy()
	out.Labels = mergeOwned(current.Labels, desired.Labels)
	out.Annotations = mergeOwned(current.Annotations, desired.Annotations)
	images := func(dst, src []corev1.Container) {
		for i := range dst {
			for _, c := range src {
				if c.Name == dst[i].Name {
					dst[i].Image = c.Image
				}
			}
		}
	}
	images(out.Spec.Containers, desired.Spec.Containers)
	images(out.Spec.InitContainers, desired.Spec.InitContainers)
	if desired.Spec.ActiveDeadlineSeconds != nil {
		out.Spec.ActiveDeadlineSeconds = desired.Spec.ActiveDeadlineSeconds
	}
	for _, t := range desired.Spec.Tolerations {
		if !hasToleration(out.Spec.Tolerations, t) {
			out.Spec.Tolerations = append(out.Spec.Tolerations, t)
		}
	}
	return out, !apiequality.Semantic.DeepEqual(out.ObjectMeta, current.ObjectMeta) ||
		!apiequality.Semantic.DeepEqual(out.Spec, current.Spec)
}

// mergeOwned is current's keys that are not the tenant's (see tenantKey)
// and not the syncer's own, plus desired's.
func mergeOwned(current, desired map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range current {
		if !tenantKey(k) && !syncerKey(k) {
			out[k] = v
		}
	}
	for k, v := range desired {
		out[k] = v
	}
	return out
}

func syncerKey(k string) bool {
	switch k {
	case Label, NamespaceLabel, NameAnnotation, NamespaceAnnotation, UIDAnnotation,
		berthv1.PodGroupNameLabel, berthv1.PodGroupTotalCountAnnotation, berthv1.QueueNameLabel, berthv1.PriorityClassLabel:
		return true
	}
	return false
}

func hasToleration(ts []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range ts {
		if have.MatchToleration(&t) && apiequality.Semantic.DeepEqual(have.TolerationSeconds, t.TolerationSeconds) {
			return true
		}
	}
	return false
}
