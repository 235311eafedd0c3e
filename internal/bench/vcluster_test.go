package bench

import "testing"

func TestParseClientWritesCountsTheSyncersWritesByCluster(t *testing.T) {
	metrics := `# HELP rest_client_requests_total Number of HTTP requests
rest_client_requests_total{code="201",host="127.0.0.1:1000",method="POST"} 1000
rest_client_requests_total{code="200",host="127.0.0.1:1000",method="GET"} 7
rest_client_requests_total{code="200",host="127.0.0.1:2000",method="PATCH"} 2000
rest_client_requests_total{code="409",host="127.0.0.1:2000",method="PATCH"} 3
rest_client_requests_total{code="201",host="elsewhere:1",method="POST"} 5
`
	got := parseClientWrites(metrics, map[string]string{"127.0.0.1:1000": "host", "127.0.0.1:2000": "virtual"})
	if len(got) != 2 || got["host POST"] != 1000 || got["virtual PATCH"] != 2003 {
		t.Fatalf("parseWrites = %v", got)
	}
}
