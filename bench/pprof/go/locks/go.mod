module libdump/bench/pprof/go/locks

go 1.19
