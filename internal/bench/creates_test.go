package bench

import "testing"

func TestParseWebhookTotals(t *testing.T) {
	text := `# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency
# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="jobs.berth.dev",operation="CREATE",rejected="false",type="admit",le="0.005"} 10
apiserver_admission_webhook_admission_duration_seconds_sum{name="jobs.berth.dev",operation="CREATE",rejected="false",type="admit"} 1.5
apiserver_admission_webhook_admission_duration_seconds_count{name="jobs.berth.dev",operation="CREATE",rejected="false",type="admit"} 100
apiserver_admission_webhook_admission_duration_seconds_sum{name="pods.berth.dev",operation="CREATE",rejected="true",type="admit"} 0.5
apiserver_admission_webhook_admission_duration_seconds_count{name="pods.berth.dev",operation="CREATE",rejected="true",type="admit"} 20
apiserver_admission_webhook_admission_duration_seconds_sum{name="other.example.com",operation="CREATE",rejected="false",type="validating"} 9
apiserver_admission_webhook_admission_duration_seconds_count{name="other.example.com",operation="CREATE",rejected="false",type="validating"} 900
apiserver_admission_webhook_rejection_count{error_type="no_error",name="pods.berth.dev",operation="CREATE",rejection_code="403",type="admit"} 20
`
	got := parseWebhookTotals(text)
	if got.sum != 2 || got.count != 120 {
		t.Errorf("parseWebhookTotals = %+v, want the mutating webhooks' sum 2 s and count 120 (buckets, validating webhooks and other metrics left out)", got)
	}
	if got := parseWebhookTotals(""); got != (webhookTotal{}) {
		t.Errorf("no metrics: %+v, want zero", got)
	}
}

func TestCreatesClassOf(t *testing.T) {
	for name, want := range map[string]string{
		"queued-12":                  "queued",
		"plain-3":                    "plain",
		"queued-dry-7":               "queued-dry",
		"plain-dry-0":                "plain-dry",
		"job-queued-12-5d8f1":        "queued", // its Workload
		"queued-12.18a2b3c4d5e6f7a8": "queued", // an event about it
		"bench-creates":              "",
	} {
		if got := createsClassOf(name); got != want {
			t.Errorf("createsClassOf(%q) = %q, want %q", name, got, want)
		}
	}
}
