package translate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// sep joins a virtual object's name, its namespace and the virtual cluster's
// name into its host name.
const sep = "-x-"

// MaxNameLength is the longest virtual cluster name: its host names end
// with it, and must leave room for the object's own name within 63
// characters.
const MaxNameLength = 32

var nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a virtual cluster's name. Host names end with
// "-x-<name>", so a name holding "-x-", or starting with "x-", could make
// two virtual clusters sharing a host namespace give two objects one host
// name ("a-x" in "v" and "a" in "x-v" would both be "...-x-x-v").
func ValidateName(name string) error {
	switch {
	case !nameRE.MatchString(name) || len(name) > MaxNameLength:
		return fmt.Errorf("virtual cluster name %q: must be lower-case letters, digits and '-', start with a letter, end with a letter or digit, and have at most %d characters", name, MaxNameLength)
	case strings.Contains(name, sep) || strings.HasPrefix(name, "x-"):
		return fmt.Errorf("virtual cluster name %q: must not contain %q or start with \"x-\": host names end with %q and the name, and could be read two ways", name, sep, sep)
	}
	return nil
}

// HostName is the host name of the virtual object namespace/name in virtual
// cluster vc: "<name>-x-<namespace>-x-<vc>" when that is at most 63
// characters and can be read back one way only; otherwise the start of it,
// a hash of all three, and "-x-<vc>".
//
// Two different objects never get one name. A readable name holds "-x-"
// exactly once before its "-x-<vc>" suffix, at the one place it can be read
// back: neither name nor namespace holds it, and none is made where they
// meet. A hashed one holds it never. The suffix is fixed per virtual
// cluster, and no virtual cluster's "-x-<vc>" can end another's
// (ValidateName), so names of different virtual clusters cannot meet either.
func HostName(name, namespace, vc string) string {
	plain := name + sep + namespace
	if len(plain)+len(sep)+len(vc) <= 63 && readable(name, namespace) {
		return plain + sep + vc
	}
	sum := sha256.Sum256([]byte(name + "/" + namespace + "/" + vc))
	hash := hex.EncodeToString(sum[:])[:12]
	room := 63 - len(sep) - len(vc) - len(hash) - 1
	head := plain
	if len(head) > room {
		head = head[:room]
	}
	head = noSep(strings.TrimRight(head, "-."))
	out := hash
	if head != "" {
		out = noSep(head + "-" + hash)
	}
	return out + sep + vc
}

// readable: name-x-namespace reads back one way only.
func readable(name, namespace string) bool {
	return !strings.Contains(name, sep) && !strings.Contains(namespace, sep) &&
		!strings.HasSuffix(name, "-x") && !strings.HasPrefix(namespace, "x-")
}

// noSep takes every "-x-" out of s (each becomes "-"), so a hashed name
// never holds one.
func noSep(s string) string {
	for strings.Contains(s, sep) {
		s = strings.ReplaceAll(s, sep, "-")
	}
	return s
}

// BerthNamespace is where berth's controller keeps its own Secrets (webhook
// certificates, worker clusters' kubeconfigs).
const BerthNamespace = "berth-system"

// ValidateHostNamespace refuses a host namespace no virtual cluster may run
// in: its syncer reads and writes every Secret of its host namespace, so it
// must not be Kubernetes' own, berth's, or default.
func ValidateHostNamespace(ns string) error {
	if ns == "default" || ns == BerthNamespace || strings.HasPrefix(ns, "kube-") {
		return fmt.Errorf("host namespace %s: a virtual cluster's syncer may read and write every Secret of its host namespace, so it may not be default, %s or kube-*; give it a namespace of its own (--host-namespace)",
			ns, BerthNamespace)
	}
	return nil
}

// HostNamespaceInUse says why an existing host namespace cannot be given to
// virtual cluster vc, from what is in it ("" when it can): the virtual
// clusters whose syncer accounts are there (named by their Label), and the
// Secrets that are not vc's own (by their Label too). A syncer could read
// either tenant's, or someone else's, Secrets there.
func HostNamespaceInUse(ns, vc string, syncersOf, secretsOf []string) string {
	var why []string
	for _, other := range syncersOf {
		if other != vc {
			why = append(why, fmt.Sprintf("virtual cluster %s runs there", other))
			break
		}
	}
	foreign := 0
	for _, owner := range secretsOf {
		if owner != vc {
			foreign++
		}
	}
	if foreign > 0 {
		why = append(why, fmt.Sprintf("it holds %d Secrets that are not virtual cluster %s's", foreign, vc))
	}
	if len(why) == 0 {
		return ""
	}
	return fmt.Sprintf("host namespace %s: %s, and a virtual cluster's syncer may read and write every Secret of its host namespace; give virtual cluster %s a namespace of its own (--host-namespace)",
		ns, strings.Join(why, "; "), vc)
}
