package translate

import (
	"math/rand"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestHostNameIsReadableWhenShort(t *testing.T) {
	if got, want := HostName("web-0", "shop", "team-a"), "web-0-x-shop-x-team-a"; got != want {
		t.Fatalf("HostName = %q, want %q", got, want)
	}
}

func TestHostNameCutsLongNamesWithAHash(t *testing.T) {
	long := strings.Repeat("a", 60)
	a, b := HostName(long+"1", "ns", "vc"), HostName(long+"2", "ns", "vc")
	for _, n := range []string{a, b} {
		if len(n) > 63 || !strings.HasSuffix(n, "-x-vc") || !strings.HasPrefix(n, "aaaa") {
			t.Errorf("HostName = %q: want at most 63 characters, the name's start and the suffix -x-vc", n)
		}
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			t.Errorf("HostName = %q is not a DNS label (Service names must be): %v", n, errs)
		}
	}
	if a == b {
		t.Fatalf("two long names that differ only at the end got one host name %q", a)
	}
}

// Names and namespaces may hold the separator themselves; a tenant choosing
// them to collide with another object of theirs (or of a virtual cluster
// sharing the host namespace) must not succeed.
func TestHostNamesNeverCollide(t *testing.T) {
	parts := []string{"a", "x", "b", "-x-", "-x", "x-", "-", "ab", "c"}
	word := func(r *rand.Rand) string {
		for {
			var sb strings.Builder
			for n := 1 + r.Intn(6); n > 0; n-- {
				sb.WriteString(parts[r.Intn(len(parts))])
			}
			s := sb.String()
			if !strings.HasPrefix(s, "-") && !strings.HasSuffix(s, "-") {
				return s
			}
		}
	}
	r := rand.New(rand.NewSource(1))
	seen := map[string]string{}
	vcs := []string{"v", "xv", "v-x", "vv", "a-v", "x"}
	for i := 0; i < 200000; i++ {
		name, ns, vc := word(r), word(r), vcs[r.Intn(len(vcs))]
		if i%7 == 0 {
			name += strings.Repeat("n", 40)
		}
		key := name + "/" + ns + "/" + vc
		h := HostName(name, ns, vc)
		if len(h) > 63 {
			t.Fatalf("HostName(%q, %q, %q) = %q: longer than 63", name, ns, vc, h)
		}
		if other, ok := seen[h]; ok && other != key {
			t.Fatalf("%s and %s both got host name %q", other, key, h)
		}
		seen[h] = key
	}
}

func TestValidateNameRefusesTheSeparator(t *testing.T) {
	for _, bad := range []string{"a-x-b", "x-v", "A", "1a", "a-", strings.Repeat("a", MaxNameLength+1)} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
		}
	}
	for _, good := range []string{"a", "team-a", "x", "ax-b"} {
		if err := ValidateName(good); err != nil {
			t.Errorf("ValidateName(%q) = %v", good, err)
		}
	}
}
