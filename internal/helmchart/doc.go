// Package helmchart renders, lints and packages berth's Helm chart
// (charts/berth) with Helm's own library, and installs it: what `make
// chart`, hack/manifests (config/deploy is the chart rendered with its
// defaults) and the tests use, so that what is tested is what users install.
package helmchart
