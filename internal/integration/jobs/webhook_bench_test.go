package jobs_test

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/jobs"
	. "github.com/berth-dev/berth/test/fixtures"
)

// BenchmarkHoldJob is the Job webhook's work for one queued Job created:
// decode, hold (suspend), and answer with the patch. The API server waits
// for it on every Job creation.
func BenchmarkHoldJob(b *testing.B) {
	h := integration.NewHolder(jobs.Kind{})
	job := MakeJob("bench", "ns").Queue("main").Parallelism(4).Request("cpu", "1").Obj()
	job.Spec.Suspend = nil
	raw, err := json.Marshal(job)
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
		Object: runtime.RawExtension{Raw: raw}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp := h.Handle(ctx, req)
		if !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("not held: %+v", resp.Result)
		}
	}
}
