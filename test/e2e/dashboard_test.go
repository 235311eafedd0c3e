package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/dashboard"
)

// `berth up` serves the dashboard beside the instance and prints its URL:
// it answers with the cohort tree, refuses a request for another host, and
// is gone once the instance is down.
func TestUpServesTheDashboard(t *testing.T) {
	inst := newInstance(t, "dash")
	all, stdout, code := inst.runSplit(t, "up", "--detach")
	if code != 0 {
		t.Fatalf("berth up --detach: exit %d\n%s", code, all)
	}
	url := ""
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "watch it: "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("no dashboard URL on 127.0.0.1 in the output:\n%s", stdout)
	}
	res, err := http.Get(url + "api/tree")
	if err != nil {
		t.Fatal(err)
	}
	var tree dashboard.Tree
	err = json.NewDecoder(res.Body).Decode(&tree)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK || tree.Roots == nil {
		t.Fatalf("GET %sapi/tree: %s, %v, %+v", url, res.Status, err, tree)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Host = "attacker.example"
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host: %s; want 403 Forbidden", res.Status)
	}

	inst.down(t)
	if res, err := http.Get(url); err == nil {
		res.Body.Close()
		t.Errorf("the dashboard still answers after berth down: %s", res.Status)
	}
}
