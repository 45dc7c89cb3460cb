// Package raceflag says whether the race detector is built in, for the few tests whose
// bound is on memory: its instrumentation allocates and maps memory the program does not.
package raceflag
