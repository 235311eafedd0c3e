// Package devicequota decides what the devices a pod claims through
// Dynamic Resource Allocation count for in quota.
//
// A pod asks for devices through its spec.resourceClaims, each naming a
// ResourceClaimTemplate (a claim made for the pod alone) or a ResourceClaim
// (one shared by name). A platform maps DeviceClasses to quota resources
// (Mappings, from berth controller's --device-class-mappings): a device of
// a mapped class then counts as one of that resource, as a GPU requested
// through an extended resource would. Only what can be counted per pod
// before it exists is accepted: claims from templates whose requests ask
// for an exact number of devices of a mapped class. Anything else (a
// shared claim, "all devices", a list of alternatives, an unmapped class)
// is refused with the field that says so, rather than let devices run
// past quota uncounted.
//
// With no mappings, devices are not berth's business: nothing is counted
// and nothing refused. The package does no I/O: templates come through a
// lookup the caller provides.
package devicequota
