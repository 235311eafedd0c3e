package realnode

import (
	"slices"
	"testing"
)

func TestSplitRule(t *testing.T) {
	for rule, want := range map[string][]string{
		`INPUT -j KUBE-FIREWALL`: {"INPUT", "-j", "KUBE-FIREWALL"},
		`POSTROUTING -s 10.244.0.2/32 -m comment --comment "name: \"berth\" id: \"abc\"" -j CNI-1f2e`: {
			"POSTROUTING", "-s", "10.244.0.2/32", "-m", "comment", "--comment", `name: "berth" id: "abc"`, "-j", "CNI-1f2e"},
		`KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -j DROP`: {
			"KUBE-FIREWALL", "!", "-s", "127.0.0.0/8", "-d", "127.0.0.0/8", "-m", "comment", "--comment",
			"block incoming localnet connections", "-j", "DROP"},
	} {
		if got := splitRule(rule); !slices.Equal(got, want) {
			t.Errorf("splitRule(%q) = %q, want %q", rule, got, want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/root/my\040dir/x`); got != "/root/my dir/x" {
		t.Errorf("unescapeMount = %q", got)
	}
}
