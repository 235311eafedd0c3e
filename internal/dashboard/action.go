package dashboard

import (
	"fmt"
	"net/http"
	"strings"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Action is a change a page asks for (berth dashboard --allow-actions):
// stop, drain or resume a ClusterQueue or LocalQueue, stop or resume a
// Workload, as berth stop / resume do.
type Action struct {
	Verb      string `json:"verb"` // stop, drain or resume
	Kind      string `json:"kind"` // ClusterQueue, LocalQueue or Workload
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Verbs of an Action.
const (
	Stop   = "stop"
	Drain  = "drain"
	Resume = "resume"
)

// Check refuses an action berth cannot do, naming the field.
func (a Action) Check() error {
	switch a.Verb {
	case Stop, Resume:
	case Drain:
		if a.Kind == "Workload" {
			return fmt.Errorf("verb %q: for queues only; a stopped Workload always gives its quota back", a.Verb)
		}
	default:
		return fmt.Errorf("verb %q: want %s, %s or %s", a.Verb, Stop, Drain, Resume)
	}
	switch a.Kind {
	case "ClusterQueue":
		if a.Namespace != "" {
			return fmt.Errorf("namespace %q: a ClusterQueue has none", a.Namespace)
		}
	case "LocalQueue", "Workload":
		if a.Namespace == "" {
			return fmt.Errorf("namespace: required for a %s", a.Kind)
		}
	default:
		return fmt.Errorf("kind %q: want ClusterQueue, LocalQueue or Workload", a.Kind)
	}
	if a.Name == "" {
		return fmt.Errorf("name: required")
	}
	return nil
}

// StopPolicy is what a queue action sets.
func (a Action) StopPolicy() berthv1.StopPolicy {
	switch a.Verb {
	case Stop:
		return berthv1.Hold
	case Drain:
		return berthv1.HoldAndDrain
	}
	return berthv1.StopPolicyNone
}

func (a Action) String() string {
	if a.Namespace == "" {
		return a.Kind + " " + a.Name
	}
	return a.Kind + " " + a.Namespace + "/" + a.Name
}

// bearer is the token of an "Authorization: Bearer" header, "" without one.
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
