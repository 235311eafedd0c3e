# Everything here is also plain `go` commands; the Makefile only names them.
GO ?= go
CONTROLLER_GEN = $(GO) tool -modfile=hack/tools.mod controller-gen
GOLANGCI_LINT = $(GO) tool -modfile=hack/lint.mod golangci-lint

.PHONY: all build image chart test generate verify-generated webdeps fmt vet lint up bench

all: build

# What `berth version` says, read from git (the toolchain stamps it too, but
# not where GOFLAGS has -buildvcs=false).
LDFLAGS ?= $(shell $(GO) run ./hack/buildinfo)

build: ## build bin/berth
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/berth ./cmd/berth

image: ## berth's OCI image for linux/amd64 and linux/arm64 as bin/berth-image.tar; PUSH=registry/repo[:tag] pushes it instead (the tag by default berth's version)
	$(GO) run ./hack/image $(if $(PUSH),--push $(PUSH))

chart: ## berth's Helm chart as bin/berth-<version>.tgz, its appVersion (and default image tag) the version make image labels
	$(GO) run ./hack/chart

test: ## the full test suite (unit, integration and e2e against a real control plane), after installing what it needs as root (berth doctor --for tests --fix)
	$(GO) run ./hack/doctor --for tests --fix
	$(GO) test -p 3 -timeout 30m ./...

generate: ## deepcopy, CRDs and RBAC from the markers in api/ and internal/
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/v1beta1/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/kwok/... output:crd:artifacts:config=config/sim/crd
	$(GO) run ./hack/crdlimits config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=berth-controller paths="{./internal/controller/...,./internal/integration/...}" output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=berth-sim paths=./internal/sim/... output:rbac:artifacts:config=config/sim/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=sigs.k8s.io/jobset/api/jobset/v1alpha2 output:crd:artifacts:config=config/addons/jobset/crd
	$(CONTROLLER_GEN) rbac:roleName=berth-jobset paths="{sigs.k8s.io/jobset/pkg/controllers/...,./internal/addon/jobset/...}" output:rbac:artifacts:config=config/addons/jobset/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=sigs.k8s.io/lws/api/leaderworkerset/v1 output:crd:artifacts:config=config/addons/leaderworkerset/crd
	$(CONTROLLER_GEN) rbac:roleName=berth-leaderworkerset paths="{sigs.k8s.io/lws/pkg/controllers,./internal/addon/leaderworkerset/...}" output:rbac:artifacts:config=config/addons/leaderworkerset/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true,allowDangerousTypes=true paths=github.com/ray-project/kuberay/ray-operator/apis/ray/v1 output:crd:artifacts:config=config/addons/ray/crd
	$(CONTROLLER_GEN) rbac:roleName=berth-ray paths="{github.com/ray-project/kuberay/ray-operator/controllers/ray,./internal/addon/ray/...,./internal/sim/raydashboard/...}" output:rbac:artifacts:config=config/addons/ray/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1 output:crd:artifacts:config=config/addons/trainer/crd
	$(CONTROLLER_GEN) rbac:roleName=berth-trainer paths="{github.com/kubeflow/trainer/v2/pkg/controller/...,github.com/kubeflow/trainer/v2/pkg/runtime/...,./internal/addon/trainer/...}" output:rbac:artifacts:config=config/addons/trainer/rbac
	$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true paths=github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1 output:crd:artifacts:config=config/addons/training-operator/crd
	rm config/addons/training-operator/crd/kubeflow.org_mpijobs.yaml # the MPI Operator's kind (internal/addon/trainingoperator)
	$(CONTROLLER_GEN) rbac:roleName=berth-training-operator paths="{github.com/kubeflow/training-operator/pkg/controller.v1/...,./internal/addon/trainingoperator/...}" output:rbac:artifacts:config=config/addons/training-operator/rbac
	$(GO) run ./hack/manifests

verify-generated: generate ## fail when generated files differ from what is committed
	@git diff --exit-code --stat -- api config charts || \
		{ echo "generated files are stale: run 'make generate' and commit the result"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- api config charts); \
		if [ -n "$$untracked" ]; then echo "generated files not committed: $$untracked"; exit 1; fi

webdeps: ## the dashboard's front-end packages (internal/dashboard/webdeps, npm ci) copied into internal/dashboard/web/vendor
	bash hack/webdeps/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: ## gofmt, go vet, golangci-lint (.golangci.yml) and go mod tidy, as CI runs them
	@bad=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$bad" ]; then echo "gofmt needed: $$bad"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run 'go mod tidy' and commit the result"; exit 1; }
	cd test/certmanager && $(GO) vet ./... && $(GO) mod tidy -diff
	cd hack/kueuerace && $(GO) mod tidy -diff

up: build ## start a local control plane in the foreground
	bin/berth up
