package devices

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Annotation on a simulated node: its devices, as JSON {"driver": count}.
const Annotation = "berth.dev/sim-devices"

// NodeLabel on a ResourceSlice names the simulated node it describes.
const NodeLabel = "berth.dev/sim-devices-of"

// Devices is how many devices a node has of each driver.
type Devices map[string]int

// Parse reads the annotation; an empty one is no devices.
func Parse(annotation string) (Devices, error) {
	d := Devices{}
	if strings.TrimSpace(annotation) == "" {
		return d, nil
	}
	if err := json.Unmarshal([]byte(annotation), &d); err != nil {
		return nil, fmt.Errorf("annotation %s: %q is not {\"driver\": count}: %w", Annotation, annotation, err)
	}
	return d, d.Validate()
}

// ParseFlag reads "driver=count,driver=count", the form of --node-devices.
func ParseFlag(s string) (Devices, error) {
	d := Devices{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil {
			return nil, fmt.Errorf("--node-devices: %q is not driver=count", part)
		}
		d[strings.TrimSpace(k)] = n
	}
	return d, d.Validate()
}

// Validate reports a driver name the API would refuse or a count it
// cannot hold in one ResourceSlice.
func (d Devices) Validate() error {
	for _, driver := range slices.Sorted(maps.Keys(d)) {
		n := d[driver]
		if errs := validation.IsDNS1123Subdomain(driver); len(errs) > 0 || len(driver) > resourcev1.DriverNameMaxLength {
			return fmt.Errorf("devices: driver %q must be a DNS subdomain of at most %d characters", driver, resourcev1.DriverNameMaxLength)
		}
		if n < 0 || n > resourcev1.ResourceSliceMaxDevices {
			return fmt.Errorf("devices: %s=%d: a node offers 0 to %d devices of a driver", driver, n, resourcev1.ResourceSliceMaxDevices)
		}
	}
	return nil
}

// Annotate is the annotation value of d, "" for none.
func (d Devices) Annotate() string {
	if len(d) == 0 {
		return ""
	}
	b, _ := json.Marshal(map[string]int(d)) // a map of ints always marshals
	return string(b)
}

// Slices are the ResourceSlices of node: one pool per driver named for the
// node, devices device-0, device-1, ... each with its index as attribute,
// owned by the node so they go with it.
func Slices(node *corev1.Node) ([]*resourcev1.ResourceSlice, error) {
	d, err := Parse(node.Annotations[Annotation])
	if err != nil {
		return nil, err
	}
	var out []*resourcev1.ResourceSlice
	for _, driver := range slices.Sorted(maps.Keys(d)) {
		if d[driver] == 0 {
			continue
		}
		s := &resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:            SliceName(node.Name, driver),
				Labels:          map[string]string{NodeLabel: LabelOf(node.Name)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   driver,
				Pool:     resourcev1.ResourcePool{Name: node.Name, Generation: 1, ResourceSliceCount: 1},
				NodeName: ptr.To(node.Name),
			},
		}
		for i := range d[driver] {
			s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{
				Name:       "device-" + strconv.Itoa(i),
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"index": {IntValue: ptr.To(int64(i))}},
			})
		}
		out = append(out, s)
	}
	return out, nil
}

// SliceName names a node's slice of a driver: both, cut and hashed when
// they would not fit in a name.
func SliceName(node, driver string) string {
	name := node + "-" + driver
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-11], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

// LabelOf is the NodeLabel value of a node's slices.
func LabelOf(s string) string {
	if len(s) <= validation.LabelValueMaxLength && len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:validation.LabelValueMaxLength/2]
}
