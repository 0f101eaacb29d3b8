module libdump/bench/dump/go

go 1.19
