# The two commands of the README. Both install missing Debian packages first.
.PHONY: demo test
demo:
	scripts/demo.sh
test:
	scripts/test.sh
