package sim

import (
	"errors"
	"fmt"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

// stageSet is the compiled stages in force, looked up by kind and name.
// It is replaced as a whole when Stage objects change, never edited.
type stageSet struct {
	byKind map[string][]*stage.Stage
	byName map[string]*stage.Stage
}

// Layer merges stage sources: a stage replaces one of the same name from an
// earlier source. Within one source a name may appear once.
func Layer(sources ...[]*kwokv1.Stage) []*kwokv1.Stage {
	index := map[string]int{}
	var out []*kwokv1.Stage
	for _, src := range sources {
		seen := map[string]bool{}
		for _, s := range src {
			if i, ok := index[s.Name]; ok && !seen[s.Name] {
				out[i] = s
			} else {
				index[s.Name] = len(out)
				out = append(out, s)
			}
			seen[s.Name] = true
		}
	}
	return out
}

// supported reports whether the simulator drives objects of the stage's kind.
func supported(s *stage.Stage) error {
	if s.Kind.Group == "" && s.Kind.Version == "v1" && (s.Kind.Kind == "Node" || s.Kind.Kind == "Pod") {
		return nil
	}
	return fmt.Errorf("stage %q: spec.resourceRef: %s is not simulated; berth sim drives v1 Node and Pod stages", s.Name, s.Kind)
}

// compileSet compiles stages into a set, reporting every stage that fails.
func compileSet(stages []*kwokv1.Stage) (*stageSet, error) {
	compiled, err := stage.CompileAll(stages)
	set := &stageSet{byKind: map[string][]*stage.Stage{}, byName: map[string]*stage.Stage{}}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range compiled {
		if err := supported(s); err != nil {
			errs = append(errs, err)
			continue
		}
		set.byKind[s.Kind.Kind] = append(set.byKind[s.Kind.Kind], s)
		set.byName[s.Name] = s
	}
	return set, errors.Join(errs...)
}
