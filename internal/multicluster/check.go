package multicluster

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Reasons of a multicluster AdmissionCheck's Active condition.
const (
	ReasonActive         = "Active"
	ReasonBadParameters  = "BadParameters"
	ReasonConfigNotFound = "ConfigNotFound"
	ReasonNoActiveWorker = "NoActiveWorker"
)

// ConfigOf names the MultiClusterConfig a multicluster check's parameters
// point at, or says what is wrong with them.
func ConfigOf(ac *berthv1.AdmissionCheck) (string, error) {
	p := ac.Spec.Parameters
	if p == nil {
		return "", fmt.Errorf("AdmissionCheck %s: spec.parameters must name a MultiClusterConfig (apiGroup berth.dev, kind MultiClusterConfig)", ac.Name)
	}
	if p.APIGroup != berthv1.GroupVersion.Group || p.Kind != "MultiClusterConfig" {
		return "", fmt.Errorf("AdmissionCheck %s: spec.parameters is apiGroup %q, kind %s; want apiGroup berth.dev, kind MultiClusterConfig",
			ac.Name, p.APIGroup, p.Kind)
	}
	return p.Name, nil
}

// CheckActive is the Active condition of a multicluster check: its config
// (nil when not found) must exist and name at least one worker that is
// reached (active). Inactive, the check's ClusterQueues admit nothing, so no
// quota is held for work that has nowhere to go.
func CheckActive(ac *berthv1.AdmissionCheck, config *berthv1.MultiClusterConfig, active map[string]bool) metav1.Condition {
	c := metav1.Condition{Type: berthv1.AdmissionCheckActive, Status: metav1.ConditionFalse, ObservedGeneration: ac.Generation}
	name, err := ConfigOf(ac)
	switch {
	case err != nil:
		c.Reason, c.Message = ReasonBadParameters, err.Error()
		return c
	case config == nil:
		c.Reason, c.Message = ReasonConfigNotFound, fmt.Sprintf("MultiClusterConfig %s not found", name)
		return c
	}
	var up, down []string
	for _, w := range config.Spec.Clusters {
		if active[w] {
			up = append(up, w)
		} else {
			down = append(down, w)
		}
	}
	if len(up) == 0 {
		c.Reason = ReasonNoActiveWorker
		c.Message = fmt.Sprintf("no worker cluster of MultiClusterConfig %s is active (%s)", name, strings.Join(down, ", "))
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, ReasonActive
	c.Message = "dispatches to " + strings.Join(up, ", ")
	if len(down) > 0 {
		c.Message += "; not active: " + strings.Join(down, ", ")
	}
	return c
}
