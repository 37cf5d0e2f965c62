package control

// Control flow records its regions through internal/regions, which package
// tape implements; linking tape here keeps what importing control always
// gave (the CPU kernels, which tape links, among them).
import _ "github.com/eagerflow/eagerflow/tape"
