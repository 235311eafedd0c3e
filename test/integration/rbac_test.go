package integration

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-dev/berth/internal/localcluster"
	"github.com/berth-dev/berth/internal/testenv"
)

var updateReviewed = flag.Bool("update-reviewed", false, "rewrite config/rbac/reviewed/ from what the identities may do now")

// Least privilege: what berth's controller and simulator may do, as the
// API server answers for each identity, is exactly the reviewed list in
// config/rbac/reviewed/. A permission added to the code's RBAC markers fails
// here until the list, and so a reviewer, says yes to it.
func TestIdentitiesMayDoOnlyWhatIsReviewed(t *testing.T) {
	env := testenv.New(t)
	for _, user := range []string{localcluster.ControllerIdentity.User, localcluster.SimIdentity.User} {
		t.Run(user, func(t *testing.T) {
			got := rulesOf(t, env, user)
			path := "../../config/rbac/reviewed/" + user + ".txt"
			if *updateReviewed {
				header := "# What " + user + " may do, reviewed. One rule a line: namespace (or * for\n" +
					"# cluster-wide), API group, resource, verbs. Regenerate with\n" +
					"#   go test ./test/integration -run TestIdentitiesMayDoOnlyWhatIsReviewed -update-reviewed\n" +
					"# and review the difference.\n"
				if err := os.WriteFile(path, []byte(header+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, l := range strings.Split(string(data), "\n") {
				if l != "" && !strings.HasPrefix(l, "#") {
					want = append(want, l)
				}
			}
			for _, l := range got {
				if !slices.Contains(want, l) {
					t.Errorf("%s may: %s, which %s does not list", user, l, path)
				}
			}
			for _, l := range want {
				if !slices.Contains(got, l) {
					t.Errorf("%s lists %q, which %s may not do (remove it from the list)", path, l, user)
				}
			}
		})
	}
	// berth's webhook certificate and its key are for the controller alone.
	for user, want := range map[string]bool{localcluster.ControllerIdentity.User: true, localcluster.SimIdentity.User: false} {
		sar, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "berth-system", Verb: "get", Resource: "secrets"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != want {
			t.Errorf("%s may read Secrets in berth-system: %v, want %v", user, sar.Status.Allowed, want)
		}
	}
}

// rulesOf lists what user may do, cluster-wide (as seen from namespace
// default) and in berth-system and kube-system, one sorted line a rule and
// resource (and the names it is limited to, if any).
func rulesOf(t *testing.T, env *testenv.Env, user string) []string {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]map[string]bool{} // scope group resource -> verbs
	for _, ns := range []string{"default", "berth-system", "kube-system"} {
		review, err := kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range review.Status.ResourceRules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if len(r.ResourceNames) > 0 {
						// A rule limited to named objects says so.
						res += "[" + strings.Join(r.ResourceNames, ",") + "]"
					}
					key := fmt.Sprintf("%s %s %s", ns, groupName(g), res)
					if rules[key] == nil {
						rules[key] = map[string]bool{}
					}
					for _, v := range r.Verbs {
						rules[key][v] = true
					}
				}
			}
		}
	}
	var out []string
	for key, verbs := range rules {
		ns, rest, _ := strings.Cut(key, " ")
		if ns != "default" {
			// Cluster-wide rules show in every namespace: list only what
			// berth-system and kube-system add.
			if d := rules["default "+rest]; d != nil {
				for v := range d {
					delete(verbs, v)
				}
			}
			if len(verbs) == 0 {
				continue
			}
		} else {
			ns = "*"
		}
		vs := make([]string, 0, len(verbs))
		for v := range verbs {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		out = append(out, fmt.Sprintf("%s %s: %s", ns, rest, strings.Join(vs, ",")))
	}
	slices.Sort(out)
	return out
}

func groupName(g string) string {
	if g == "" {
		return "core"
	}
	return g
}
