package model

// GELU is gelu, for the tests of package model_test.
var GELU = gelu
