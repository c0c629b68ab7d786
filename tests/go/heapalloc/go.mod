module heapsnap.test/heapalloc

go 1.19
