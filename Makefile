# The commands of the README. Each installs missing Debian packages first.
.PHONY: demo view test
demo:
	scripts/demo.sh
# The demo, then heapview serving its heap at http://localhost:7000/ until Ctrl-C.
view:
	LIBDUMP_DEMO_SERVE=1 scripts/demo.sh
test:
	scripts/test.sh
