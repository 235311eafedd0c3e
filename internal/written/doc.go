// Package written remembers the resourceVersion each of a controller's own
// writes returned, so that the controller can tell when its cache still
// shows an object from before that write. Acting on such a copy would write
// again what was already written: refused as a conflict when the write
// carries the old resourceVersion, or a redundant request when it does not.
package written
