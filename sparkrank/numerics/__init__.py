"""The bottom layer: numerical building blocks every other layer may use and that use nothing
of sparkrank (order-independent double-double sums, the float32/float64 CSR and dense products
and their vector code, vector padding).  See ARCHITECTURE.md."""
