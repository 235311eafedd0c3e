package translate

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Pod Security levels a virtual cluster's host namespace may enforce
// (Kubernetes' Pod Security Standards). Baseline is the default: it forbids
// every known way out of a container to the host. Privileged is what
// --allow-host-access gives.
const (
	PodSecurityBaseline   = string(psapi.LevelBaseline)
	PodSecurityRestricted = string(psapi.LevelRestricted)
)

// Level is the Pod Security level the host runs the virtual cluster's Pods at.
func (p Policy) Level() psapi.Level {
	switch {
	case p.AllowHostAccess:
		return psapi.LevelPrivileged
	case p.PodSecurity == PodSecurityRestricted:
		return psapi.LevelRestricted
	}
	return psapi.LevelBaseline
}

// ValidatePodSecurity refuses a level other than baseline or restricted
// ("" is baseline); privileged is asked for with --allow-host-access.
func ValidatePodSecurity(level string) error {
	switch level {
	case "", PodSecurityBaseline, PodSecurityRestricted:
		return nil
	}
	return fmt.Errorf("pod security level %q: want %s or %s (a virtual cluster whose Pods may reach the host is made with --allow-host-access)",
		level, PodSecurityBaseline, PodSecurityRestricted)
}

// NamespaceLabels are the labels the host namespace of a virtual cluster
// carries, so the host's API server enforces the same level on every Pod in
// it as the syncer does before making one.
func NamespaceLabels(p Policy) map[string]string {
	return map[string]string{
		psapi.EnforceLevelLabel:   string(p.Level()),
		psapi.EnforceVersionLabel: psapi.VersionLatest,
	}
}

// hostAccessChecks are the Pod Security checks that HostPod makes itself,
// naming each field (hostAccess): with --allow-host-access they are allowed.
var hostAccessChecks = []policy.CheckID{"hostNamespaces", "hostPathVolumes", "hostPorts", "privileged"}

var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	checks := slices.DeleteFunc(policy.DefaultChecks(), func(c policy.Check) bool {
		return slices.Contains(hostAccessChecks, c.ID)
	})
	return policy.NewEvaluator(checks, nil)
})

// podSecurity is what Pod Security at o's level forbids in the tenant's Pod
// v (its metadata carries the older AppArmor and seccomp annotations), one
// error per check, each naming the fields at fault as Kubernetes does. The
// checks of hostAccessChecks are left to HostPod. Nothing is checked when
// the virtual cluster may reach the host.
func podSecurity(v *corev1.Pod, o Options) field.ErrorList {
	level := o.Level()
	if level == psapi.LevelPrivileged {
		return nil
	}
	e, err := evaluator()
	if err != nil {
		// Refuse rather than let a Pod through unchecked.
		return field.ErrorList{field.InternalError(field.NewPath("spec"), fmt.Errorf("pod security checks: %w", err))}
	}
	var errs field.ErrorList
	for _, r := range e.EvaluatePod(psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}, &v.ObjectMeta, &v.Spec) {
		if r.Allowed {
			continue
		}
		what := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			what += " (" + r.ForbiddenDetail + ")"
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			fmt.Sprintf("%s: the host runs virtual cluster %s's Pods at Pod Security level %q", what, o.VCluster, level)))
	}
	return errs
}

// runtimeClass refuses a runtime class the host's admin did not allow the
// virtual cluster: a runtime handler runs containers outside the host's
// usual sandbox, or with fewer limits.
func runtimeClass(v *corev1.Pod, o Options) *field.Error {
	rc := v.Spec.RuntimeClassName
	if rc == nil || o.AllowHostAccess || slices.Contains(o.RuntimeClasses, *rc) {
		return nil
	}
	allowed := "none"
	if len(o.RuntimeClasses) > 0 {
		allowed = strings.Join(o.RuntimeClasses, ", ")
	}
	return field.Forbidden(field.NewPath("spec", "runtimeClassName"),
		fmt.Sprintf("runtime class %q is not one the host allows virtual cluster %s (allowed: %s; the host's admin sets them with --runtime-class)",
			*rc, o.VCluster, allowed))
}
