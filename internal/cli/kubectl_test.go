package cli

import (
	"slices"
	"testing"
)

func TestTakeLeadingFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		name, dir string
		rest      []string
	}{
		{args: []string{"get", "ns"}, name: "berth", rest: []string{"get", "ns"}},
		{args: []string{"--name", "x", "get", "ns"}, name: "x", rest: []string{"get", "ns"}},
		{args: []string{"--name=x", "--data-dir=/d", "get", "ns"}, name: "x", dir: "/d", rest: []string{"get", "ns"}},
		// kubectl's own --name further along is left alone.
		{args: []string{"expose", "deploy/a", "--name", "svc"}, name: "berth", rest: []string{"expose", "deploy/a", "--name", "svc"}},
	} {
		name, dir := "berth", ""
		rest := takeLeadingFlags(tc.args, map[string]*string{"--name": &name, "--data-dir": &dir})
		if name != tc.name || dir != tc.dir || !slices.Equal(rest, tc.rest) {
			t.Errorf("takeLeadingFlags(%q) = %q, name %q, dir %q", tc.args, rest, name, dir)
		}
	}
}
