package c3thrift

// The Thrift types below are written by hand against the thrift protocol API,
// field for field as the Thrift compiler would write them, for this IDL:
//
//	struct Record {
//	   1: string rowKey
//	   2: i64    ts
//	   3: i64    userId
//	   4: i32    campaignId
//	   5: i32    creativeId
//	   6: string slot
//	   7: string country
//	   8: string device
//	   9: string os
//	  10: double price
//	  11: double bidFloor
//	  12: i32    latencyMicros
//	  13: bool   clicked
//	  14: bool   converted
//	  15: i64    sessionId
//	  16: string publisher
//	}
//
//	service EventStore {
//	  oneway void putRecords(1: string table, 2: list<Record> records)
//	}

import (
	"context"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"
)

// Record is one ad event row.
type Record struct {
	RowKey        string
	Ts            int64
	UserID        int64
	CampaignID    int32
	CreativeID    int32
	Slot          string
	Country       string
	Device        string
	Os            string
	Price         float64
	BidFloor      float64
	LatencyMicros int32
	Clicked       bool
	Converted     bool
	SessionID     int64
	Publisher     string
}

// Write serializes the record.
func (r *Record) Write(ctx context.Context, p thrift.TProtocol) error {
	if err := p.WriteStructBegin(ctx, "Record"); err != nil {
		return thrift.PrependError("Record write struct begin error: ", err)
	}
	for _, err := range [...]error{
		writeString(ctx, p, "rowKey", 1, r.RowKey),
		writeI64(ctx, p, "ts", 2, r.Ts),
		writeI64(ctx, p, "userId", 3, r.UserID),
		writeI32(ctx, p, "campaignId", 4, r.CampaignID),
		writeI32(ctx, p, "creativeId", 5, r.CreativeID),
		writeString(ctx, p, "slot", 6, r.Slot),
		writeString(ctx, p, "country", 7, r.Country),
		writeString(ctx, p, "device", 8, r.Device),
		writeString(ctx, p, "os", 9, r.Os),
		writeDouble(ctx, p, "price", 10, r.Price),
		writeDouble(ctx, p, "bidFloor", 11, r.BidFloor),
		writeI32(ctx, p, "latencyMicros", 12, r.LatencyMicros),
		writeBool(ctx, p, "clicked", 13, r.Clicked),
		writeBool(ctx, p, "converted", 14, r.Converted),
		writeI64(ctx, p, "sessionId", 15, r.SessionID),
		writeString(ctx, p, "publisher", 16, r.Publisher),
	} {
		if err != nil {
			return err
		}
	}
	if err := p.WriteFieldStop(ctx); err != nil {
		return thrift.PrependError("write field stop error: ", err)
	}
	if err := p.WriteStructEnd(ctx); err != nil {
		return thrift.PrependError("write struct stop error: ", err)
	}
	return nil
}

// PutRecordsArgs is the argument struct of EventStore.putRecords.
type PutRecordsArgs struct {
	Table   string
	Records []*Record
}

// Write serializes the arguments.
func (a *PutRecordsArgs) Write(ctx context.Context, p thrift.TProtocol) error {
	if err := p.WriteStructBegin(ctx, "putRecords_args"); err != nil {
		return thrift.PrependError("putRecords_args write struct begin error: ", err)
	}
	if err := writeString(ctx, p, "table", 1, a.Table); err != nil {
		return err
	}
	if err := p.WriteFieldBegin(ctx, "records", thrift.LIST, 2); err != nil {
		return fieldError("records", 2, err)
	}
	if err := p.WriteListBegin(ctx, thrift.STRUCT, len(a.Records)); err != nil {
		return thrift.PrependError("error writing list begin: ", err)
	}
	for _, r := range a.Records {
		if err := r.Write(ctx, p); err != nil {
			return err
		}
	}
	if err := p.WriteListEnd(ctx); err != nil {
		return thrift.PrependError("error writing list end: ", err)
	}
	if err := p.WriteFieldEnd(ctx); err != nil {
		return fieldError("records", 2, err)
	}
	if err := p.WriteFieldStop(ctx); err != nil {
		return thrift.PrependError("write field stop error: ", err)
	}
	return p.WriteStructEnd(ctx)
}

// One helper per field type: the field header, the value, the field end.
// Once one write fails the transport is broken and the message is dropped,
// so the later fields' errors (evaluated anyway) do not matter.

func writeString(ctx context.Context, p thrift.TProtocol, name string, id int16, v string) error {
	if err := p.WriteFieldBegin(ctx, name, thrift.STRING, id); err != nil {
		return fieldError(name, id, err)
	}
	if err := p.WriteString(ctx, v); err != nil {
		return fieldError(name, id, err)
	}
	return p.WriteFieldEnd(ctx)
}

func writeI64(ctx context.Context, p thrift.TProtocol, name string, id int16, v int64) error {
	if err := p.WriteFieldBegin(ctx, name, thrift.I64, id); err != nil {
		return fieldError(name, id, err)
	}
	if err := p.WriteI64(ctx, v); err != nil {
		return fieldError(name, id, err)
	}
	return p.WriteFieldEnd(ctx)
}

func writeI32(ctx context.Context, p thrift.TProtocol, name string, id int16, v int32) error {
	if err := p.WriteFieldBegin(ctx, name, thrift.I32, id); err != nil {
		return fieldError(name, id, err)
	}
	if err := p.WriteI32(ctx, v); err != nil {
		return fieldError(name, id, err)
	}
	return p.WriteFieldEnd(ctx)
}

func writeDouble(ctx context.Context, p thrift.TProtocol, name string, id int16, v float64) error {
	if err := p.WriteFieldBegin(ctx, name, thrift.DOUBLE, id); err != nil {
		return fieldError(name, id, err)
	}
	if err := p.WriteDouble(ctx, v); err != nil {
		return fieldError(name, id, err)
	}
	return p.WriteFieldEnd(ctx)
}

func writeBool(ctx context.Context, p thrift.TProtocol, name string, id int16, v bool) error {
	if err := p.WriteFieldBegin(ctx, name, thrift.BOOL, id); err != nil {
		return fieldError(name, id, err)
	}
	if err := p.WriteBool(ctx, v); err != nil {
		return fieldError(name, id, err)
	}
	return p.WriteFieldEnd(ctx)
}

func fieldError(name string, id int16, err error) error {
	return thrift.PrependError(fmt.Sprintf("%s field %d write error: ", name, id), err)
}
