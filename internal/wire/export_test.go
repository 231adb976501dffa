package wire

// UpdateGolden is the -update flag, for the golden tests of package
// wire_test (which can import envelope; package wire cannot).
var UpdateGolden = update
