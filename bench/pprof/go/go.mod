module libdump/bench/pprof/go

go 1.19
