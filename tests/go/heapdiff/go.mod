module heapsnap.test/heapdiff

go 1.19
