module libdump/bench/flightrecorder

go 1.19
