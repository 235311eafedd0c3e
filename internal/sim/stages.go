package sim

import (
	"errors"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

// stageSet is the compiled stages in force, looked up by kind (kindKey)
// and name.
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

// compileSet compiles stages into a set, reporting every stage that fails.
func compileSet(stages []*kwokv1.Stage) (*stageSet, error) {
	compiled, err := stage.CompileAll(stages)
	set := &stageSet{byKind: map[string][]*stage.Stage{}, byName: map[string]*stage.Stage{}}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range compiled {
		set.byKind[kindKey(s.Kind)] = append(set.byKind[kindKey(s.Kind)], s)
		set.byName[s.Name] = s
	}
	return set, errors.Join(errs...)
}
