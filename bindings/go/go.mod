module gpusched

go 1.19
