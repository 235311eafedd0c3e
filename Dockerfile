# The berth image, for config/deploy. berth is one static binary.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /berth ./cmd/berth

FROM gcr.io/distroless/static:nonroot
COPY --from=build /berth /berth
USER 65532:65532
ENTRYPOINT ["/berth"]
