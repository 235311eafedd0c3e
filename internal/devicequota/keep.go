package devicequota

import (
	"slices"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// Finalizer keeps a template as counted (berthv1.DevicesCountedFinalizer).
const Finalizer = berthv1.DevicesCountedFinalizer

// TemplatesOf lists the ResourceClaimTemplates wl's pods claim devices
// through, sorted, each once.
func TemplatesOf(wl *berthv1.Workload) []string {
	var out []string
	for _, ps := range wl.Spec.PodSets {
		for _, c := range ps.ResourceClaims {
			if c.ResourceClaimTemplateName != nil && !slices.Contains(out, *c.ResourceClaimTemplateName) {
				out = append(out, *c.ResourceClaimTemplateName)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Keeps reports whether wl needs its templates kept: it may still be
// admitted, or make pods. One finished, or being deleted (its object stops
// making pods), does not.
func Keeps(wl *berthv1.Workload) bool {
	return !workload.IsFinished(wl) && wl.DeletionTimestamp == nil
}
