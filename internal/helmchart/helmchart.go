package helmchart

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Dir is the chart's folder, from the repository's root.
const Dir = "charts/berth"

// ReleaseName is the release the docs and tests install berth as. The
// chart's objects have fixed names (berth is one per cluster: its CRDs and
// webhooks are cluster-wide), so the release's name changes none of them.
const ReleaseName = "berth"

// KubeVersion is the Kubernetes version charts are rendered for when no
// cluster is asked: the one berth is built and tested with.
var KubeVersion = chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}

// Load reads the chart from dir, a folder or a packaged .tgz.
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart at %s: %w", dir, err)
	}
	return ch, nil
}

// Render is the chart's templates (not its CRDs) as `helm template` renders
// them for a release in namespace: vals over the chart's defaults, checked
// against its schema, objects in the order Helm installs them.
func Render(ch *chart.Chart, namespace string, vals map[string]any) (string, error) {
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities.Copy(),
		Log:          func(string, ...any) {},
	}
	cfg.Capabilities.KubeVersion = KubeVersion
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = ReleaseName, namespace
	inst.KubeVersion = &KubeVersion
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return "", fmt.Errorf("rendering the chart: %w", err)
	}
	return rel.Manifest, nil
}

// Lint is `helm lint --strict` of the chart at dir with vals: every
// message at warning level or above, as one error; nil when there are none.
func Lint(dir string, vals map[string]any) error {
	l := action.NewLint()
	l.Strict, l.Namespace, l.KubeVersion = true, "berth-system", &KubeVersion
	res := l.Run([]string{dir}, vals)
	var errs []error
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, errors.New(m.Error()))
		}
	}
	if len(errs) == 0 {
		errs = res.Errors
	}
	return errors.Join(errs...)
}

// Package writes the chart at dir as a .tgz into dest, stamped with berth's
// version (a git tag or pseudo-version, "v" and all) as its appVersion, so
// that its image tag defaults to it, and as its version without the "v".
// It returns the archive's path.
func Package(dir, dest, version string) (string, error) {
	if version == "" {
		return "", errors.New("packaging the chart: no version to stamp it with")
	}
	p := action.NewPackage()
	p.Destination = dest
	p.AppVersion = version
	p.Version = strings.TrimPrefix(version, "v")
	path, err := p.Run(dir, nil)
	if err != nil {
		return "", fmt.Errorf("packaging the chart at %s as %s: %w", dir, version, err)
	}
	return path, nil
}
