package stage

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
)

// celCostLimit bounds one evaluation: Stage objects come from the cluster,
// and a selector runs on every change of every object of its kind.
const celCostLimit = 1_000_000

// celEnv declares self, the object, of no fixed type: stages act on any kind.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("self", cel.DynType), ext.Strings())
})

// compileCEL compiles a selector's CEL expression, which must be able to
// yield a bool.
func compileCEL(expr string) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression %q: %w", expr, iss.Err())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("CEL expression %q yields %s, not a bool", expr, t)
	}
	return env.Program(ast, cel.CostLimit(celCostLimit))
}

// celTrue reports whether the expression yields true on the object; one
// that fails (a field the object lacks, the cost limit) does not.
func celTrue(prg cel.Program, obj map[string]any) bool {
	out, _, err := prg.Eval(map[string]any{"self": obj})
	return err == nil && out == types.True
}
