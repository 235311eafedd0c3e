package configured

import (
	"os"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func mpiJob(t *testing.T) Compiled {
	t.Helper()
	data, err := os.ReadFile("../../../examples/configured/kinds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 1 {
		t.Fatalf("%d kinds, want 1", len(kinds))
	}
	return kinds[0]
}

func mpiJobCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("../../../examples/configured/mpijob-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

func TestTheExampleParsesAndFitsItsCRD(t *testing.T) {
	c := mpiJob(t)
	if c.GVK.String() != "kubeflow.org/v2beta1, Kind=MPIJob" || c.Suspend.Pointer() != "/spec/runPolicy/suspend" || len(c.PodSets) != 2 {
		t.Fatalf("read %+v", c)
	}
	if c.CRDName() != "mpijobs.kubeflow.org" {
		t.Errorf("CRD name %s", c.CRDName())
	}
	if err := CheckSchema(c, mpiJobCRD(t)); err != nil {
		t.Fatal(err)
	}
}

// Each mistake is refused with the kind and the field it is in.
func TestParseRefusesWhatCannotBeFollowed(t *testing.T) {
	const good = `
kinds:
- group: example.com
  version: v1
  kind: Thing
  resource: things
  suspend: spec.suspend
  podSets:
  - {name: main, template: spec.template, count: spec.replicas}
  finished: {succeeded: [Done]}
`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"group: example.com", "group: ''", "Thing: group: is empty"},
		{"group: example.com\n  version: v1\n  kind: Thing", "group: batch\n  version: v1\n  kind: Job", "berth queues Job.batch with its own integration"},
		{"resource: things", "resource: Things", `Thing: resource: "Things" is not a resource name`},
		{"suspend: spec.suspend", "suspend: status.suspend", `Thing: suspend: "status.suspend": the fields berth reads and sets are under spec`},
		{"suspend: spec.suspend", "suspend: spec.run-policy.suspend", `"run-policy"`},
		{"suspend: spec.suspend", "suspend: spec.in", `"in"`},
		{"name: main,", "name: Main,", `Thing: podSets[0].name: "Main"`},
		{"count: spec.replicas}", "count: spec.replicas}\n  - {name: main, template: spec.other}", `podSets[1].name: "main" is used twice`},
		{"template: spec.template,", "template: '',", "Thing: podSets[0].template: is empty"},
		{"finished: {succeeded: [Done]}", "finished: {}", "Thing: finished: names no condition"},
		{"finished:", "finsihed:", `unknown field "finsihed"`},
		{"finished: {succeeded: [Done]}", "finished: {succeeded: [Done], never: true}", "Thing: finished: names conditions and says never"},
		{"{name: main, template: spec.template, count: spec.replicas}", "{name: main, list: spec.groups, nameFrom: name, template: template}",
			"Thing: podSets[0].name: a list's pod sets are named by their entries"},
		{"{name: main, template: spec.template, count: spec.replicas}", "{list: spec.groups, template: template}", "Thing: podSets[0].nameFrom: is empty"},
		{"count: spec.replicas}", "minCount: spec.least}", "Thing: podSets[0]: minCount and maxCount bound a count; this pod set has none"},
		{"count: spec.replicas}", "count: spec.replicas, nameFrom: name}", "Thing: podSets[0].nameFrom: names the entries of a list"},
		{"finished:", "unsupported: [status.x]\n  finished:", `Thing: unsupported[0]: "status.x": the fields berth reads and sets are under spec`},
		{"finished:", "podLabels: ['a b']\n  finished:", `Thing: podLabels[0]: "a b"`},
	} {
		_, err := Parse([]byte(strings.Replace(good, tc.from, tc.to, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s -> %s: got %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
	if _, err := Parse([]byte(good + strings.TrimPrefix(good, "\nkinds:\n"))); err == nil || !strings.Contains(err.Error(), "kinds[1]: Thing.example.com is configured twice") {
		t.Errorf("twice: %v", err)
	}
}

// A path the CRD does not have, or has with another type, is refused
// naming the path; where the schema is open the rest is taken on trust.
func TestCheckSchemaRefusesPathsTheCRDLacks(t *testing.T) {
	crd := mpiJobCRD(t)
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Suspend = "spec.suspend" }, `suspend: spec.suspend: the schema has no field "suspend" at spec`},
		{func(s *Spec) { s.Suspend = "spec.runPolicy.cleanPodPolicy" }, "suspend: spec.runPolicy.cleanPodPolicy: is string in the schema, want boolean"},
		{func(s *Spec) { s.PodSets[1].Count = "spec.mpiReplicaSpecs.Worker.restartPolicy" }, "podSets[1].count: spec.mpiReplicaSpecs.Worker.restartPolicy: is string in the schema, want integer"},
		{func(s *Spec) { s.PodSets[0].Template = "spec.launcher" }, `podSets[0].template: spec.launcher: the schema has no field "launcher" at spec`},
		{func(s *Spec) { s.Version = "v1" }, "has no version v1"},
		{func(s *Spec) { s.Kind = "TFJob" }, "defines MPIJob.kubeflow.org, not TFJob.kubeflow.org"},
	} {
		c := mpiJob(t)
		spec := c.Spec
		spec.PodSets = append([]PodSetSpec(nil), spec.PodSets...)
		tc.edit(&spec)
		compiled, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSchema(compiled, crd); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	// Inside a template (preserve-unknown-fields) nothing is checked.
	c := mpiJob(t)
	c.Spec.PodSets[0].Count = "spec.mpiReplicaSpecs.Launcher.template.spec.replicas"
	compiled, err := Compile(c.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchema(compiled, crd); err != nil {
		t.Errorf("an open schema: %v", err)
	}
	crd.Spec.Versions[0].Subresources = nil
	if err := CheckSchema(mpiJob(t), crd); err == nil || !strings.Contains(err.Error(), "no status subresource") {
		t.Errorf("no status subresource: %v", err)
	}
}
