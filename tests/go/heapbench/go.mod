module heapsnap.test/heapbench

go 1.19
